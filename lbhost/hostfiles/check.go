// Check: a host against the host files, each finding with the command that
// fixes it.

package hostfiles

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tfccm/tfccm/lbhost/transport"
)

// Finding is the result of one check on a host.
type Finding struct {
	// Check names what was checked ("haproxy", "sudo", ...).
	Check string
	OK    bool
	// What was found (the version, or what is missing or wrong).
	What string
	// Fix is the command (or file to install) that fixes it.
	Fix string
}

// Minimum versions: HAProxy's master CLI commands and server-state
// handling lbhost uses, keepalived's unicast VRRP with include files.
var (
	MinHAProxy    = [2]int{2, 6}
	MinKeepalived = [2]int{2, 0}
)

// loginRunner is what the sudo check needs of the ssh transport.
type loginRunner interface {
	RunAsLogin(ctx context.Context, argv ...string) ([]byte, error)
}

var _ loginRunner = (*transport.SSH)(nil)

// Check runs every check of target on the host t is connected to. With
// sudo, a login without its sudo rights gets that finding alone (every
// other command would fail the same way).
func Check(ctx context.Context, t transport.Transport, target Target) []Finding {
	var out []Finding
	if target.SSH.Sudo {
		f := checkSudo(ctx, t, target)
		out = append(out, f)
		if !f.OK {
			return out
		}
	}
	if target.Router {
		return append(out, checkFRR(ctx, t)...)
	}
	out = append(out,
		checkVersion(ctx, t, "haproxy", MinHAProxy, []string{target.HAProxy, "-v"},
			"apt-get install haproxy (Debian 12 and Ubuntu 24.04 have 2.6 or later; older releases: haproxy.debian.net)"),
		checkVersion(ctx, t, "keepalived", MinKeepalived, []string{"sh", "-c", `exec "$0" --version 2>&1`, "keepalived"},
			"apt-get install keepalived"),
		checkTool(ctx, t, "flock", "/usr/bin/flock", "apt-get install util-linux"),
		checkTool(ctx, t, "nft", "/usr/sbin/nft", "apt-get install nftables"),
		checkDirs(ctx, t, target),
		checkBase(ctx, t, target),
		checkInclude(ctx, t, target),
		checkMasterSocket(ctx, t, target),
	)
	out = append(out, checkSysctls(ctx, t)...)
	if target.BGP {
		out = append(out, checkFRR(ctx, t)...)
	}
	return out
}

// checkFRR checks the FRR tools lbhost runs on a BGP host or router:
// vtysh (its dry run checks every configuration) and frr-reload.py (which
// applies one, changing only what differs).
func checkFRR(ctx context.Context, t transport.Transport) []Finding {
	return []Finding{
		checkTool(ctx, t, "vtysh", "/usr/bin/vtysh", "apt-get install frr (BGP: lbhost checks FRR's configuration with vtysh -C)"),
		checkTool(ctx, t, "frr-reload.py", "/usr/lib/frr/frr-reload.py", "apt-get install frr-pythontools (BGP: lbhost applies FRR's configuration with frr-reload.py)"),
	}
}

func checkSudo(ctx context.Context, t transport.Transport, target Target) Finding {
	f := Finding{Check: "sudo", Fix: fmt.Sprintf("install lbhost/hostfiles/sudoers.d/tfccm (login %s) as %s, mode 0440: visudo -cf it first (tfccm lbhost prepare --user %[1]s does it)", target.SSH.User, SudoersFile)}
	lr, ok := t.(loginRunner)
	if !ok {
		f.What = "the transport cannot ask sudo"
		return f
	}
	var missing []string
	for _, c := range SudoCommands() {
		if _, err := lr.RunAsLogin(ctx, "sudo", "-n", "-l", "--", c); err != nil {
			// sudo -l refuses a command that is not there at all: that is
			// the tool's own finding (nft, flock, ...), not sudo's.
			if _, err := lr.RunAsLogin(ctx, "test", "-x", c); err != nil {
				continue
			}
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		f.What = fmt.Sprintf("%s may not run as root through sudo -n: %s", target.SSH.User, strings.Join(missing, ", "))
		return f
	}
	f.OK, f.What = true, fmt.Sprintf("%s runs lbhost's %d commands through sudo -n", target.SSH.User, len(SudoCommands()))
	return f
}

var reVersion = regexp.MustCompile(`(?i)(?:ha-?proxy|keepalived)\s+(?:version\s+)?v?(\d+)\.(\d+)(?:\.(\d+))?`)

func checkVersion(ctx context.Context, t transport.Transport, name string, min [2]int, argv []string, fix string) Finding {
	f := Finding{Check: name, Fix: fix}
	out, err := t.Run(ctx, nil, argv...)
	if err != nil {
		f.What = fmt.Sprintf("%s not found or failed: %v", name, err)
		return f
	}
	m := reVersion.FindStringSubmatch(string(out))
	if m == nil {
		f.What = fmt.Sprintf("%s does not say its version: %q", argv[0], firstLine(string(out)))
		return f
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	version := strings.TrimSuffix(m[1]+"."+m[2]+"."+m[3], ".")
	if major < min[0] || major == min[0] && minor < min[1] {
		f.What = fmt.Sprintf("%s %s is older than %d.%d", name, version, min[0], min[1])
		return f
	}
	f.OK, f.What = true, name+" "+version
	return f
}

func checkTool(ctx context.Context, t transport.Transport, name, path, fix string) Finding {
	if _, err := t.Run(ctx, nil, "test", "-x", path); err != nil {
		return Finding{Check: name, What: path + " is missing", Fix: fix}
	}
	return Finding{Check: name, OK: true, What: path}
}

func checkDirs(ctx context.Context, t transport.Transport, target Target) Finding {
	f := Finding{Check: "config_dir", Fix: fmt.Sprintf("mkdir -p %[1]s/fragments %[1]s/claims %[1]s/keepalived", target.ConfigDir)}
	var missing []string
	for _, d := range []string{"fragments", "claims", "keepalived"} {
		if _, err := t.Run(ctx, nil, "test", "-d", target.ConfigDir+"/"+d); err != nil {
			missing = append(missing, target.ConfigDir+"/"+d)
		}
	}
	if len(missing) > 0 {
		f.What = "missing " + strings.Join(missing, ", ")
		return f
	}
	f.OK, f.What = true, target.ConfigDir
	return f
}

func checkBase(ctx context.Context, t transport.Transport, target Target) Finding {
	path := target.ConfigDir + "/base.cfg"
	f := Finding{Check: "base.cfg", Fix: fmt.Sprintf("install lbhost/hostfiles/base.cfg as %s (config_dir %s)", path, target.ConfigDir)}
	b, err := t.ReadFile(ctx, path)
	if err != nil {
		f.What = fmt.Sprintf("%s: %v", path, err)
		return f
	}
	var missing []string
	for _, l := range []string{"server-state-file " + target.ConfigDir + "/server-state", "load-server-state-from-file global"} {
		if !hasLine(string(b), l) {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		f.What = fmt.Sprintf("%s lacks %q", path, strings.Join(missing, `", "`))
		return f
	}
	f.OK, f.What = true, path
	return f
}

func checkInclude(ctx context.Context, t transport.Transport, target Target) Finding {
	line := IncludeLine(target.ConfigDir)
	f := Finding{Check: "keepalived include", Fix: fmt.Sprintf("echo '%s' >> %s && systemctl reload keepalived", line, target.KeepalivedConfig)}
	b, err := t.ReadFile(ctx, target.KeepalivedConfig)
	if err != nil {
		f.What = fmt.Sprintf("%s: %v", target.KeepalivedConfig, err)
		f.Fix = fmt.Sprintf("install lbhost/hostfiles/keepalived.conf as %s", target.KeepalivedConfig)
		return f
	}
	if !hasLine(string(b), line) {
		f.What = fmt.Sprintf("%s lacks %q", target.KeepalivedConfig, line)
		return f
	}
	f.OK, f.What = true, target.KeepalivedConfig
	return f
}

func checkMasterSocket(ctx context.Context, t transport.Transport, target Target) Finding {
	sock := target.ConfigDir + "/master.sock"
	f := Finding{Check: "master socket", Fix: fmt.Sprintf("install lbhost/hostfiles/haproxy.service.d/tfccm.conf as %s, then systemctl daemon-reload && systemctl restart haproxy", HAProxyDropIn)}
	if target.SSH.Sudo {
		f.Fix += fmt.Sprintf(" (its group, tfccm, must be a group of %s)", target.SSH.User)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := t.DialUnix(ctx, sock)
	if err != nil {
		f.What = fmt.Sprintf("HAProxy's master CLI %s: %v", sock, err)
		if why, fix := socketGroupProblem(ctx, t, target); why != "" {
			f.What, f.Fix = why+"; "+f.What, fix
		}
		return f
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "show proc\n"); err != nil {
		f.What = fmt.Sprintf("HAProxy's master CLI %s: %v", sock, err)
		return f
	}
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	out, _ := io.ReadAll(conn)
	if !strings.Contains(string(out), "worker") {
		f.What = fmt.Sprintf("%s answers without a worker (is it HAProxy's master CLI, haproxy -W -S?): %q", sock, firstLine(string(out)))
		return f
	}
	f.OK, f.What = true, sock
	return f
}

// socketGroupProblem names what keeps the master socket from the login
// when its group is the cause: HAProxy does not start without group tfccm
// ("unknown group name"), and a sudo login outside it may not connect.
func socketGroupProblem(ctx context.Context, t transport.Transport, target Target) (why, fix string) {
	// getent and id need no root: as the login itself (sudo's rules do not list them).
	run := func(argv ...string) ([]byte, error) { return t.Run(ctx, nil, argv...) }
	if lr, ok := t.(loginRunner); ok {
		run = func(argv ...string) ([]byte, error) { return lr.RunAsLogin(ctx, argv...) }
	}
	if _, err := run("getent", "group", SocketGroup); err != nil {
		return fmt.Sprintf("group %s does not exist, so HAProxy cannot create its master socket (\"unknown group name\") and does not start", SocketGroup),
			fmt.Sprintf("groupadd --system %s && systemctl restart haproxy (tfccm lbhost prepare does it)", SocketGroup)
	}
	if !target.SSH.Sudo {
		return "", ""
	}
	out, err := run("id", "-nG", target.SSH.User)
	if err == nil && !slices.Contains(strings.Fields(string(out)), SocketGroup) {
		return fmt.Sprintf("%s is not in group %s, the master socket's", target.SSH.User, SocketGroup),
			fmt.Sprintf("usermod -a -G %s %s (tfccm lbhost prepare does it)", SocketGroup, target.SSH.User)
	}
	return "", ""
}

func checkSysctls(ctx context.Context, t transport.Transport) []Finding {
	var out []Finding
	for k, want := range Sysctls() {
		f := Finding{Check: k, Fix: fmt.Sprintf("sysctl -w %s=%s and install lbhost/hostfiles/sysctl.d/60-tfccm-lbhost.conf as %s", k, want, SysctlFile)}
		b, err := t.ReadFile(ctx, "/proc/sys/"+strings.ReplaceAll(k, ".", "/"))
		switch got := strings.TrimSpace(string(b)); {
		case err != nil:
			f.What = fmt.Sprintf("%s: %v", k, err)
		case got != want:
			f.What = fmt.Sprintf("%s is %s, not %s", k, got, want)
		default:
			f.OK, f.What = true, k+" = "+got
		}
		out = append(out, f)
	}
	return out
}

func hasLine(s, line string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
