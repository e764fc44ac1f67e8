package lbhosts

import "fmt"

// The host-side configurations lbhost expects (docs/lbhost.md), shared by
// these hosts and the lbhost provider's own tests.

// SSHDConfig is an sshd_config for a test sshd on listen:port with its host
// key, authorized_keys and pid file in dir (no PAM, keys only, streamlocal
// forwarding for HAProxy's master socket). SHLVL=1 keeps bash from reading
// this machine's ~/.bashrc for every command (Debian's bash does when run
// by sshd at shell level 1; here it costs a second per command).
func SSHDConfig(listen string, port int, dir string) string {
	return fmt.Sprintf(`Port %[1]d
ListenAddress %[2]s
HostKey %[3]s/host_key
AuthorizedKeysFile %[3]s/authorized_keys
PidFile %[3]s/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowStreamLocalForwarding yes
MaxSessions 32
MaxStartups 64
SetEnv SHLVL=1
`, port, listen, dir)
}

// HAProxyBase is HAProxy's base.cfg in lbhost's layout under configDir:
// stats socket, server-state file loaded at every reload, TCP defaults.
func HAProxyBase(configDir string) string {
	return fmt.Sprintf(`global
    stats socket %[1]s/haproxy.sock mode 600 level admin
    server-state-file %[1]s/server-state
    maxconn 4096

defaults
    mode tcp
    timeout connect 3s
    timeout client 60s
    timeout server 60s
    timeout check 2s
    load-server-state-from-file global
`, configDir)
}

// KeepalivedMain is keepalived's main configuration including lbhost's
// VRRP fragments under configDir.
func KeepalivedMain(routerID, configDir string) string {
	return fmt.Sprintf("global_defs {\n    router_id %s\n}\ninclude %s/keepalived/*.conf\n", routerID, configDir)
}
