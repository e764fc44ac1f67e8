// The embedded host files, and each given for a host's own paths and login.

package hostfiles

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed base.cfg keepalived.conf haproxy.service.d/tfccm.conf sysctl.d/60-tfccm-lbhost.conf sudoers.d/tfccm packages
var files embed.FS

// The defaults the files are written for.
const (
	DefaultConfigDir = "/etc/tfccm/lbhost"
	DefaultUser      = "tfccm"
	// Paths of the files on a host (docs/install-baremetal.md).
	HAProxyDropIn     = "/etc/systemd/system/haproxy.service.d/tfccm.conf"
	KeepalivedConfig  = "/etc/keepalived/keepalived.conf"
	SysctlFile        = "/etc/sysctl.d/60-tfccm-lbhost.conf"
	SudoersFile       = "/etc/sudoers.d/tfccm"
	defaultRouterName = "lb-a"
)

// File returns one of the files by its name in this directory
// ("base.cfg", "sudoers.d/tfccm", ...).
func File(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("lbhost/hostfiles: no file %s", name))
	}
	return string(b)
}

// Packages are the Debian packages an LB host needs.
func Packages() []string { return strings.Fields(File("packages")) }

// HAProxyBase is base.cfg with config_dir configDir.
func HAProxyBase(configDir string) string {
	return strings.ReplaceAll(File("base.cfg"), DefaultConfigDir, configDir)
}

// KeepalivedMain is keepalived.conf for the host routerID, including the
// VRRP fragments under configDir.
func KeepalivedMain(routerID, configDir string) string {
	s := strings.ReplaceAll(File("keepalived.conf"), DefaultConfigDir, configDir)
	return strings.Replace(s, "router_id "+defaultRouterName, "router_id "+routerID, 1)
}

// IncludeLine is the line keepalived's main configuration needs.
func IncludeLine(configDir string) string { return "include " + configDir + "/keepalived/*.conf" }

// DropIn is the haproxy.service drop-in with config_dir configDir.
func DropIn(configDir string) string {
	return strings.ReplaceAll(File("haproxy.service.d/tfccm.conf"), DefaultConfigDir, configDir)
}

// HAProxyArgs are haproxy's arguments (after the master-worker flag) as
// the drop-in dropIn gives them to Debian's haproxy.service: -f base.cfg,
// the master socket (group tfccm), -f fragments.
func HAProxyArgs(dropIn string) []string {
	env := map[string]string{}
	for _, line := range strings.Split(dropIn, "\n") {
		rest, ok := strings.CutPrefix(line, "Environment=")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, `" "`) {
			k, v, _ := strings.Cut(strings.Trim(kv, `"`), "=")
			env[k] = v
		}
	}
	return append([]string{"-f", env["CONFIG"]}, strings.Fields(env["EXTRAOPTS"])...)
}

// Sysctls are the sysctl file's settings, name to value.
func Sysctls() map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(File("sysctl.d/60-tfccm-lbhost.conf"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out
}

// Sudoers are the sudoers rules for the login user.
func Sudoers(user string) string {
	return strings.Replace(File("sudoers.d/tfccm"), "\n"+DefaultUser+" ALL=", "\n"+user+" ALL=", 1)
}

// SudoCommands are the absolute paths the sudoers rules allow.
func SudoCommands() []string {
	for _, line := range strings.Split(File("sudoers.d/tfccm"), "\n") {
		if rest, ok := strings.CutPrefix(line, "Cmnd_Alias TFCCM_LBHOST = "); ok {
			var out []string
			for _, c := range strings.Split(rest, ",") {
				out = append(out, strings.TrimSpace(c))
			}
			return out
		}
	}
	return nil
}
