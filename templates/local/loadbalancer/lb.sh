#!/usr/bin/env bash
# lb.sh claim|release|apply|remove: one load balancer on the local cloud's
# HAProxy. Every value comes from the environment (set by main.tf) and is
# validated here before it is used or written into HAProxy's config.
#   claim    claim VIP for OWNER (claims/<VIP>) and add VIP/32 to lo in the cloud netns
#   release  drop OWNER's claim on VIP and, if unclaimed, the address
#   apply    write fragments/<OWNER>.cfg, check the whole config, reload HAProxy
#   remove   delete the fragment if it is still the one CONFIG_ID wrote, reload
# All steps are idempotent and serialized by a lock in STATE_DIR.
set -euo pipefail

die() {
	echo "local load balancer: $*" >&2
	exit 1
}
need() { # need NAME REGEX DESCRIPTION
	local val=${!1-}
	[[ $val =~ $2 ]] || die "$1 must be $3, got '${val}'"
}

OCTET='(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
RE_IP4="^($OCTET\\.){3}$OCTET\$"
RE_PORT='^([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$'
RE_CIDR="^(($OCTET\\.){3}$OCTET/([0-9]|[12][0-9]|3[0-2])|[0-9a-fA-F:]*:[0-9a-fA-F:.]*/([0-9]|[1-9][0-9]|1[01][0-9]|12[0-8]))\$"
RE_NODE='^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$'

need OWNER '^[a-z][a-z0-9-]{0,62}_[a-z0-9][a-z0-9-]{0,31}$' "<cluster>_<load balancer name>"
need CLOUD_NETNS '^[a-z0-9][a-z0-9-]{0,61}$' "a netns name"
need STATE_DIR '^/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)+$' "an absolute path"
need VIP "$RE_IP4" "an IPv4 address"
[[ -d $STATE_DIR/fragments && -d $STATE_DIR/claims ]] ||
	die "state_dir $STATE_DIR is not a local cloud's state dir (is the local cloud up?)"
mkdir -p "$STATE_DIR/tmp"

FRAGMENT=$STATE_DIR/fragments/$OWNER.cfg
CLAIM=$STATE_DIR/claims/$VIP

lock() {
	exec 9>>"$STATE_DIR/lock"
	flock -w 120 9 || die "timed out waiting for the lock on $STATE_DIR"
}

in_netns() { ip netns exec "$CLOUD_NETNS" "$@"; }

master_pid() {
	local pid
	pid=$(head -n1 "$STATE_DIR/haproxy.pid" 2>/dev/null) || die "HAProxy is not running (no pid file in $STATE_DIR)"
	[[ $pid =~ ^[0-9]+$ && $(cat "/proc/$pid/comm" 2>/dev/null) == haproxy ]] ||
		die "HAProxy is not running (stale pid file in $STATE_DIR)"
	echo "$pid"
}

# save_state keeps health-check results across the reload, so a node that
# is down does not get traffic while the new worker re-checks it. HAProxy
# would also restore a saved server's address and port, so this LB's
# entries are kept only for servers whose backend, name, address and port
# are unchanged in $1 (the new fragment, or none).
save_state() {
	local keep=${1-} tmp=$STATE_DIR/tmp/server-state.$$
	if ! in_netns bash -c 'exec 3<>/dev/tcp/127.0.0.1/9999 && echo "show servers state" >&3 && cat <&3' >"$tmp.raw" 2>/dev/null; then
		rm -f "$tmp.raw"
		return 0
	fi
	awk -v owner="$OWNER" -v keep="$keep" '
		BEGIN {
			if (keep != "") {
				while ((getline line < keep) > 0) {
					n = split(line, f, " ")
					if (f[1] == "backend") be = f[2]
					if (f[1] == "server" && n >= 3) { split(f[3], hp, ":"); ok[be " " f[2] " " hp[1] " " hp[2]] = 1 }
				}
			}
			prefix = "be_" owner "_"
		}
		NR <= 2 || $0 ~ /^#/ || NF < 19 { print; next }
		index($2, prefix) != 1 { print; next }
		(($2 " " $4 " " $5 " " $19) in ok) { print }
	' "$tmp.raw" >"$tmp"
	rm -f "$tmp.raw"
	mv -f "$tmp" "$STATE_DIR/server-state"
}

check_config() {
	local out
	if ! out=$(haproxy -c -q -f "$STATE_DIR/base.cfg" -f "$STATE_DIR/fragments" 2>&1); then
		echo "$out" >&2
		return 1
	fi
}

# workers prints the pids of the master's worker processes.
workers() {
	pgrep -P "$1" 2>/dev/null | tr '\n' ' ' || true
}

# reload signals the master and waits until the new worker has taken over:
# every address in $1 listens, every address in $2 does not, and no worker
# from before the reload still holds a listening socket. A failed reload
# keeps the old worker listening, so it ends in a clear error, not silence.
reload() {
	local want=$1 gone=$2 keep=${3-} a ok master old pid sockets
	master=$(master_pid)
	old=$(workers "$master")
	save_state "$keep"
	kill -USR2 "$master"
	for _ in $(seq 100); do
		sleep 0.05
		ok=1
		sockets=$(in_netns ss -Hltnp)
		for pid in $old; do
			! grep -qF "pid=$pid," <<<"$sockets" || ok=0
		done
		[[ -n $(workers "$master") ]] || ok=0
		for a in $want; do grep -qF " $a " <<<"$sockets" || ok=0; done
		for a in $gone; do ! grep -qF " $a " <<<"$sockets" || ok=0; done
		((ok)) && return 0
	done
	die "HAProxy did not take the new configuration within 5s (want listening: '${want}', want closed: '${gone}'); see 'show proc' on $STATE_DIR/master.sock"
}

binds_of() { # the VIP:PORT addresses a fragment file binds
	[[ -f $1 ]] || return 0
	sed -n 's/^    bind \([0-9.]*:[0-9]*\)$/\1/p' "$1"
}

claim() {
	lock
	if [[ -f $CLAIM ]]; then
		local owner
		owner=$(cat "$CLAIM")
		[[ $owner == "$OWNER" ]] || die "VIP $VIP is already claimed by load balancer $owner; plan again to get another VIP"
	else
		local tmp=$STATE_DIR/tmp/claim.$$
		echo "$OWNER" >"$tmp"
		if ! ln "$tmp" "$CLAIM" 2>/dev/null; then
			rm -f "$tmp"
			die "VIP $VIP was claimed concurrently by load balancer $(cat "$CLAIM" 2>/dev/null); plan again to get another VIP"
		fi
		rm -f "$tmp"
	fi
	ip -n "$CLOUD_NETNS" addr replace "$VIP/32" dev lo
}

release() {
	lock
	if [[ -f $CLAIM && $(cat "$CLAIM") == "$OWNER" ]]; then
		rm -f "$CLAIM"
	fi
	if [[ ! -e $CLAIM && $(ip -n "$CLOUD_NETNS" addr show dev lo) == *" $VIP/32 "* ]]; then
		ip -n "$CLOUD_NETNS" addr del "$VIP/32" dev lo
	fi
}

render() {
	need CONFIG_ID '^[0-9a-f]{16}$' "a hex config id"
	need HC_PROTOCOL '^(HTTP|HTTPS|TCP)$' "HTTP, HTTPS or TCP"
	need HC_PORT "$RE_PORT" "a port"
	[[ $HC_PROTOCOL == TCP ]] || need HC_PATH '^/[A-Za-z0-9._~/%-]{0,254}$' "a URL path"
	need PROXY '^(true|false)$' "true or false"
	need INTERNAL '^(true|false)$' "true or false"
	need AFFINITY '^(None|ClientIP)$' "None or ClientIP"
	need SERVICE '^[a-z0-9.-]{1,253}/[a-z0-9.-]{1,253}$' "namespace/name"
	local p b r port node_port name addr
	for p in ${PORTS-}; do
		[[ $p == *:* && ${p%%:*} =~ $RE_PORT && ${p#*:} =~ $RE_PORT ]] ||
			die "PORTS entry '$p' is not <port>:<node port>"
	done
	for b in ${BACKENDS-}; do
		[[ $b == *=* && ${b%%=*} =~ $RE_NODE && ${b#*=} =~ $RE_IP4 ]] ||
			die "BACKENDS entry '$b' is not <node name>=<IPv4 address>"
	done
	for r in ${SOURCE_RANGES-}; do
		[[ $r =~ $RE_CIDR ]] || die "SOURCE_RANGES entry '$r' is not a CIDR"
	done

	local balance=roundrobin
	[[ $AFFINITY == ClientIP ]] && balance=source
	local server_opts="check port $HC_PORT inter 1s fall 2 rise 2"
	[[ $HC_PROTOCOL == HTTPS ]] && server_opts+=" check-ssl verify none"
	[[ $PROXY == true ]] && server_opts+=" send-proxy-v2"

	echo "# tfccm config $CONFIG_ID"
	echo "# load balancer $OWNER for Service $SERVICE (internal=$INTERNAL: the local cloud has no public side)"
	for p in ${PORTS-}; do
		port=${p%%:*} node_port=${p##*:}
		echo
		echo "frontend fe_${OWNER}_$port"
		echo "    mode tcp"
		echo "    bind $VIP:$port"
		if [[ -n ${SOURCE_RANGES-} ]]; then
			echo "    tcp-request connection reject unless { src $SOURCE_RANGES }"
		fi
		echo "    default_backend be_${OWNER}_$port"
		echo
		echo "backend be_${OWNER}_$port"
		echo "    mode tcp"
		echo "    balance $balance"
		if [[ $HC_PROTOCOL != TCP ]]; then
			echo "    option httpchk"
			echo "    http-check send meth GET uri $HC_PATH"
			echo "    http-check expect status 200"
		fi
		echo "    default-server $server_opts"
		for b in ${BACKENDS-}; do
			name=${b%%=*} addr=${b#*=}
			echo "    server $name $addr:$node_port"
		done
	done
}

apply() {
	local tmp=$STATE_DIR/tmp/$OWNER.cfg.$$ backup=$STATE_DIR/tmp/$OWNER.cfg.bak.$$
	render >"$tmp" || { rm -f "$tmp"; exit 1; }
	lock
	local old_binds new_binds gone="" a
	old_binds=$(binds_of "$FRAGMENT")
	new_binds=$(binds_of "$tmp")
	for a in $old_binds; do
		grep -qxF "$a" <<<"$new_binds" || gone+=" $a"
	done
	rm -f "$backup"
	[[ -f $FRAGMENT ]] && cp -p "$FRAGMENT" "$backup"
	mv -f "$tmp" "$FRAGMENT"
	if ! check_config; then
		if [[ -f $backup ]]; then mv -f "$backup" "$FRAGMENT"; else rm -f "$FRAGMENT"; fi
		die "HAProxy rejected the configuration for $OWNER; nothing was changed"
	fi
	rm -f "$backup"
	reload "$new_binds" "$gone" "$FRAGMENT"
}

remove() {
	need CONFIG_ID '^[0-9a-f]{16}$' "a hex config id"
	lock
	[[ -f $FRAGMENT ]] || return 0
	if [[ $(head -n1 "$FRAGMENT") != "# tfccm config $CONFIG_ID" ]]; then
		return 0 # a newer configuration of this load balancer replaced ours
	fi
	local gone
	gone=$(binds_of "$FRAGMENT")
	rm -f "$FRAGMENT"
	reload "" "$gone"
}

case ${1-} in
claim) claim ;;
release) release ;;
apply) apply ;;
remove) remove ;;
*) die "usage: lb.sh claim|release|apply|remove" ;;
esac
