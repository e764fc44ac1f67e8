#!/bin/sh
# tfccm lbhost prepare: LB host lb-b of tfccm's baremetal set, SSH login tfccm.
# Run as root on the host (or give it as cloud-init user data); running it again changes nothing.
set -eu

# Packages: only the missing ones (no download when all are there).
missing=
for p in haproxy keepalived openssh-server iproute2 util-linux nftables sudo frr frr-pythontools; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -qx 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q && apt-get install -y -q $missing
fi

# HAProxy's master socket belongs to group tfccm (haproxy.service.d/tfccm.conf).
getent group tfccm >/dev/null || groupadd --system tfccm

# The login tfccm connects as, and its key.
id -u tfccm >/dev/null 2>&1 || useradd --system --create-home --shell /bin/sh --gid tfccm --password '*' tfccm
id -nG tfccm | tr ' ' '\n' | grep -qx tfccm || usermod -a -G tfccm tfccm
home=$(getent passwd tfccm | cut -d: -f6)
install -d -m 700 -o tfccm -g "$(id -g tfccm)" "$home/.ssh"
[ -f "$home/.ssh/authorized_keys" ] || install -m 600 -o tfccm -g "$(id -g tfccm)" /dev/null "$home/.ssh/authorized_keys"
key='ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFn3B0tNsg4UhmJRQbcVPMsXWe9J6fuk1Ip3nRGY4r5u tfccm'
grep -qxF "$key" "$home/.ssh/authorized_keys" || printf '%s\n' "$key" >> "$home/.ssh/authorized_keys"

# What tfccm may run as root (sudo -n), checked by visudo before it counts.
mkdir -p "$(dirname /etc/sudoers.d/tfccm.new)"
cat > /etc/sudoers.d/tfccm.new.tmp <<'TFCCM_EOF'
# /etc/sudoers.d/tfccm (mode 0440; check with visudo -cf): the commands
# tfccm's lbhost provider runs as root over SSH when the host's sudo
# setting is true, each as `sudo -n -- COMMAND ARGS...`. sh and env are
# among them (atomic file writes, the C locale), so this login can do
# what root can: the rules name what lbhost runs, they are no sandbox.
# vtysh and frr-reload.py: a BGP host's FRR (lbhost_bgp_speaker).
Cmnd_Alias TFCCM_LBHOST = /usr/bin/env, /usr/bin/sh, /usr/bin/rm, /usr/bin/test, /usr/bin/ls, /usr/bin/mkdir, /usr/bin/tar, /usr/bin/flock, /usr/bin/kill, /usr/bin/ss, /usr/sbin/ip, /usr/sbin/haproxy, /usr/sbin/keepalived, /usr/sbin/nft, /usr/bin/vtysh, /usr/lib/frr/frr-reload.py
tfccm ALL=(root) NOPASSWD: TFCCM_LBHOST
TFCCM_EOF
chmod 440 /etc/sudoers.d/tfccm.new.tmp && mv /etc/sudoers.d/tfccm.new.tmp /etc/sudoers.d/tfccm.new
visudo -cqf /etc/sudoers.d/tfccm.new
mv /etc/sudoers.d/tfccm.new /etc/sudoers.d/tfccm

# lbhost's directories and the host files (lbhost/hostfiles).
mkdir -p /etc/tfccm/lbhost/fragments /etc/tfccm/lbhost/claims /etc/tfccm/lbhost/keepalived
mkdir -p "$(dirname /etc/tfccm/lbhost/base.cfg)"
cat > /etc/tfccm/lbhost/base.cfg.tmp <<'TFCCM_EOF'
# /etc/tfccm/lbhost/base.cfg: HAProxy's global and defaults sections for
# tfccm's lbhost provider (its frontends are the files in fragments/). Keep
# the two server-state lines: lbhost saves the servers' health across reloads.
global
    stats socket /etc/tfccm/lbhost/haproxy.sock mode 600 level admin
    server-state-file /etc/tfccm/lbhost/server-state
    maxconn 4096

defaults
    mode tcp
    timeout connect 3s
    timeout client 60s
    timeout server 60s
    timeout check 2s
    load-server-state-from-file global
TFCCM_EOF
chmod 644 /etc/tfccm/lbhost/base.cfg.tmp && mv /etc/tfccm/lbhost/base.cfg.tmp /etc/tfccm/lbhost/base.cfg
mkdir -p "$(dirname /etc/keepalived/keepalived.conf)"
cat > /etc/keepalived/keepalived.conf.tmp <<'TFCCM_EOF'
# /etc/keepalived/keepalived.conf: keepalived with the VRRP instances tfccm's
# lbhost provider writes (one file per Service VIP). router_id: any name of
# this host. Keep your own instances here as well, if any.
global_defs {
    router_id lb-b
}
include /etc/tfccm/lbhost/keepalived/*.conf
TFCCM_EOF
chmod 644 /etc/keepalived/keepalived.conf.tmp && mv /etc/keepalived/keepalived.conf.tmp /etc/keepalived/keepalived.conf
mkdir -p "$(dirname /etc/systemd/system/haproxy.service.d/tfccm.conf)"
cat > /etc/systemd/system/haproxy.service.d/tfccm.conf.tmp <<'TFCCM_EOF'
# /etc/systemd/system/haproxy.service.d/tfccm.conf: Debian's haproxy.service
# (master-worker, -Ws) with lbhost's layout: base.cfg, then every fragment,
# and the master CLI socket lbhost reloads through. Its group tfccm must
# exist, whatever the login (HAProxy does not start without it: "unknown
# group name"); a sudo login is a member and connects as itself.
# `tfccm lbhost prepare` creates both.
[Service]
Environment="CONFIG=/etc/tfccm/lbhost/base.cfg" "EXTRAOPTS=-S /etc/tfccm/lbhost/master.sock,mode,660,group,tfccm -f /etc/tfccm/lbhost/fragments"
TFCCM_EOF
chmod 644 /etc/systemd/system/haproxy.service.d/tfccm.conf.tmp && mv /etc/systemd/system/haproxy.service.d/tfccm.conf.tmp /etc/systemd/system/haproxy.service.d/tfccm.conf
mkdir -p "$(dirname /etc/sysctl.d/60-tfccm-lbhost.conf)"
cat > /etc/sysctl.d/60-tfccm-lbhost.conf.tmp <<'TFCCM_EOF'
# /etc/sysctl.d/60-tfccm-lbhost.conf: a backup host's HAProxy binds the
# VIPs it does not hold (the VRRP master has them), IPv4 and IPv6 alike.
net.ipv4.ip_nonlocal_bind = 1
net.ipv6.ip_nonlocal_bind = 1
TFCCM_EOF
chmod 644 /etc/sysctl.d/60-tfccm-lbhost.conf.tmp && mv /etc/sysctl.d/60-tfccm-lbhost.conf.tmp /etc/sysctl.d/60-tfccm-lbhost.conf
sysctl -q -p /etc/sysctl.d/60-tfccm-lbhost.conf

systemctl daemon-reload
systemctl enable haproxy keepalived
systemctl restart haproxy keepalived
echo "LB host lb-b prepared: check it with tfccm lbhost check"
