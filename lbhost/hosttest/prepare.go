// Preparing a test host with `tfccm lbhost prepare`'s own script, in a
// view of the machine's file system where the host's system paths are its
// own directories.

package hosttest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tfccm/tfccm/lbhost/hostfiles"
)

// hostPaths are the system paths the preparation writes that every host
// has its own of: each is bind-mounted from the host's directory (named
// by own) in the mount namespace of the script and of the host's sshd (so
// of every SSH login and its sudo). The rest of the machine's file system
// is shared: packages, users and groups (useradd, groupadd and usermod
// change the machine's), config_dir and keepalived's configuration (each
// host's own path, its config_dir and keepalived_config settings).
// /usr/local/sbin holds the host's systemctl, which only logs: the test
// starts the services (StartServices) from the files the script installed.
var hostPaths = []struct{ sys, own string }{
	{"/root", "root"},
	{"/home", "home"},
	{"/etc/systemd/system", "systemd"},
	{"/etc/sudoers.d", "sudoers.d"},
	{"/etc/sysctl.d", "sysctl.d"},
	{"/usr/local/sbin", "sbin"},
}

// freshPaths are a fresh host's own paths (Options.Fresh): all of /etc (an
// overlay over the machine's, so its users, groups and every file the
// preparation writes are the host's alone, at their default paths), its
// /run (keepalived's default pid file), /root, /home and /usr/local/sbin.
var freshPaths = []struct{ sys, own string }{
	{"/root", "root"},
	{"/home", "home"},
	{"/run", "run"},
	{"/usr/local/sbin", "sbin"},
}

// paths are h's own system paths.
func (h *Host) paths() []struct{ sys, own string } {
	if h.fresh {
		return freshPaths
	}
	return hostPaths
}

// MachinePath is where the host's path p (an absolute path as the host's
// processes see it) is on this machine.
func (h *Host) MachinePath(p string) string {
	if h.fresh {
		if rest, ok := strings.CutPrefix(p, "/etc/"); ok {
			return filepath.Join(h.dir, "sys", "etc", "upper", rest)
		}
	}
	for _, own := range h.paths() {
		if rest, ok := strings.CutPrefix(p, own.sys+"/"); ok {
			return filepath.Join(h.dir, "sys", own.own, rest)
		}
	}
	return p
}

// inHost is argv run in the host: in its network namespace and its one
// mount namespace, held by its holder process (startHolder), so every
// process of the host sees the same files (one overlay on /etc: a socket
// bound in one overlay instance cannot be reached through another).
func (h *Host) inHost(argv ...string) []string {
	h.holderMu.Lock()
	pid := h.holder.Process.Pid
	h.holderMu.Unlock()
	return append([]string{"nsenter", "-t", strconv.Itoa(pid), "-m", "-n", "--"}, argv...)
}

// startHolder starts the process whose mount namespace is the host's: in
// the host's network namespace, its own system paths mounted over the
// machine's.
func (h *Host) startHolder() error {
	// sh -c: $1 is the directory of an overlay on /etc ("-": none); then
	// mount each pair ($1 over $2, ...) up to "--", and exec the rest.
	script := `if [ "$1" != - ]; then mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/upper,workdir=$1/work" /etc; fi; shift
while [ "$1" != -- ]; do mount --bind "$1" "$2"; shift 2; done; shift; exec "$@"`
	etc := "-"
	if h.fresh {
		etc = filepath.Join(h.dir, "sys", "etc")
	}
	argv := []string{"ip", "netns", "exec", h.Netns, "unshare", "--mount", "--", "sh", "-c", script, "sh", etc}
	for _, p := range h.paths() {
		argv = append(argv, filepath.Join(h.dir, "sys", p.own), p.sys)
	}
	// The ready file (a path of this machine's, seen the same way there)
	// says the mounts are done.
	ready := filepath.Join(h.dir, "holder.ready")
	_ = os.Remove(ready)
	argv = append(argv, "--", "sh", "-c", `touch "$0" && exec sleep infinity`, ready)
	cmd, err := startArgv(filepath.Join(h.dir, "holder.log"), argv)
	if err != nil {
		return err
	}
	h.holderMu.Lock()
	h.holder = cmd
	h.holderMu.Unlock()
	return waitFile(context.Background(), ready)
}

// makeSystemDirs creates the host's own system paths, with a systemctl
// that logs what it is asked (systemctl.log) in its /usr/local/sbin.
func (h *Host) makeSystemDirs() error {
	dirs := []string{filepath.Join(h.dir, "sys", "run", "sshd")}
	if h.fresh {
		dirs = append(dirs, filepath.Join(h.dir, "sys", "etc", "upper"), filepath.Join(h.dir, "sys", "etc", "work"))
	}
	for _, p := range h.paths() {
		dirs = append(dirs, filepath.Join(h.dir, "sys", p.own))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	stub := "#!/bin/sh\necho \"systemctl $*\" >> " + filepath.Join(h.dir, "systemctl.log") + "\n"
	return os.WriteFile(filepath.Join(h.dir, "sys", "sbin", "systemctl"), []byte(stub), 0o755)
}

// prepare runs `tfccm lbhost prepare`'s script for h (login h.User, the
// client key clientPub, config_dir and keepalived_config the host's own)
// with the machine's packages (the script installs none when all are
// there) and a systemctl that only logs (the test starts the services
// from the files the script installed). It returns the script's output.
func (h *Host) prepare(clientPub string) (string, error) {
	key, err := os.ReadFile(clientPub)
	if err != nil {
		return "", err
	}
	p := hostfiles.Preparation{Name: h.Name, User: h.User, AuthorizedKey: key}
	if !h.fresh {
		p.ConfigDir, p.KeepalivedConfig = h.ConfigDir, h.KeepalivedConfig
	}
	script, err := p.Script()
	if err != nil {
		return "", err
	}
	argv := h.inHost("sh", "-s")
	var out bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(script), &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("tfccm lbhost prepare's script for %s: %v: %s", h.Name, err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// Prepare runs `tfccm lbhost prepare`'s script on the host again (it
// changes nothing on a prepared host) and returns its output.
func (h *Host) Prepare(clientPub string) (string, error) { return h.prepare(clientPub) }

// SystemFiles returns the content and mode of every file the preparation
// wrote on the host (its own system paths, config_dir's base.cfg,
// keepalived's configuration), by path: what a second run must leave as is.
func (h *Host) SystemFiles() (map[string]string, error) {
	out := map[string]string{}
	add := func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		out[path] = fmt.Sprintf("%v %s", st.Mode(), b)
		return nil
	}
	err := filepath.WalkDir(filepath.Join(h.dir, "sys"), func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || strings.Contains(path, "/sys/run/") {
			return err
		}
		return add(path)
	})
	if err != nil {
		return nil, err
	}
	for _, p := range []string{filepath.Join(h.ConfigDir, "base.cfg"), h.KeepalivedConfig} {
		if err := add(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// installedDropIn is the haproxy.service drop-in the preparation
// installed on the host.
func (h *Host) installedDropIn() (string, error) {
	b, err := os.ReadFile(h.MachinePath(hostfiles.HAProxyDropIn))
	return string(b), err
}

// HAProxyArgs are HAProxy's arguments from the drop-in the preparation
// installed on the host (after -W).
func (h *Host) HAProxyArgs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.haproxyArgs...)
}

// SystemctlLog is what the host's systemctl was asked, one call a line
// ("systemctl restart haproxy keepalived").
func (h *Host) SystemctlLog() string {
	b, _ := os.ReadFile(filepath.Join(h.dir, "systemctl.log"))
	return string(b)
}

// AuthorizeOnRouter adds the public key file pub to the keys the local
// cloud router's sshd (StartRouter) authorizes: the user's own key, when
// the CCM is given that one.
func (hs *Hosts) AuthorizeOnRouter(pub string) error {
	b, err := os.ReadFile(pub)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(hs.dir, "router", "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("lbhosts: router: %w", err)
	}
	defer f.Close()
	_, err = f.Write(b)
	return err
}
