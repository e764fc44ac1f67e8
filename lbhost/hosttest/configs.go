// sshd's, HAProxy's and keepalived's configurations of a test host, from
// lbhost/hostfiles.

package hosttest

import (
	"fmt"

	"github.com/tfccm/tfccm/lbhost/hostfiles"
)

// The host-side configurations lbhost expects, shared by these hosts and
// the lbhost provider's own tests: the files of lbhost/hostfiles (what
// docs/install-baremetal.md installs on a real host), for the hosts' paths.

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
// lbhost/hostfiles/base.cfg, the file docs/install-baremetal.md installs.
func HAProxyBase(configDir string) string { return hostfiles.HAProxyBase(configDir) }

// KeepalivedMain is keepalived's main configuration including lbhost's
// VRRP fragments under configDir: lbhost/hostfiles/keepalived.conf.
func KeepalivedMain(routerID, configDir string) string {
	return hostfiles.KeepalivedMain(routerID, configDir)
}
