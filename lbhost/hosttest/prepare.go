// Preparing a test host with `tfccm lbhost prepare`'s own script, in a
// view of the machine's file system where the host's system paths are its
// own directories.

package hosttest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tfccm/tfccm/lbhost/hostfiles"
)

// hostPaths are the system paths the preparation writes that every host
// has its own of: each is bind-mounted from the host's directory (named
// by the map's value) in the mount namespace of the script and of the
// host's sshd (so of every SSH login and its sudo). The rest of the
// machine's file system is shared: packages, users and groups (useradd,
// groupadd and usermod change the machine's), config_dir and keepalived's
// configuration (each host's own path, its config_dir and
// keepalived_config settings).
var hostPaths = []struct{ sys, own string }{
	{"/root", "root"},
	{"/home", "home"},
	{"/etc/systemd/system", "systemd"},
	{"/etc/sudoers.d", "sudoers.d"},
	{"/etc/sysctl.d", "sysctl.d"},
}

// inHost is argv run in the host's network namespace with its own system
// paths (hostPaths) mounted over the machine's.
func (h *Host) inHost(argv ...string) []string {
	// sh -c: mount each pair ($1 over $2, ...) up to "--", then exec the rest.
	script := `while [ "$1" != -- ]; do mount --bind "$1" "$2"; shift 2; done; shift; exec "$@"`
	out := []string{"ip", "netns", "exec", h.Netns, "unshare", "--mount", "--", "sh", "-c", script, "sh"}
	for _, p := range hostPaths {
		out = append(out, filepath.Join(h.dir, "sys", p.own), p.sys)
	}
	return append(append(out, "--"), argv...)
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
	script, err := hostfiles.Preparation{Name: h.Name, User: h.User, AuthorizedKey: key, ConfigDir: h.ConfigDir, KeepalivedConfig: h.KeepalivedConfig}.Script()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(h.dir, "bin")
	for _, p := range hostPaths {
		if err := os.MkdirAll(filepath.Join(h.dir, "sys", p.own), 0o755); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", err
	}
	stub := "#!/bin/sh\necho \"systemctl $*\" >> " + filepath.Join(h.dir, "systemctl.log") + "\n"
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte(stub), 0o755); err != nil {
		return "", err
	}
	argv := h.inHost("env", "PATH="+bin+":/usr/sbin:/usr/bin:/sbin:/bin", "sh", "-s")
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
		if err != nil || d.IsDir() {
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
	b, err := os.ReadFile(filepath.Join(h.dir, "sys", "systemd", strings.TrimPrefix(hostfiles.HAProxyDropIn, "/etc/systemd/system/")))
	return string(b), err
}

// HAProxyArgs are HAProxy's arguments from the drop-in the preparation
// installed on the host (after -W).
func (h *Host) HAProxyArgs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.haproxyArgs...)
}
