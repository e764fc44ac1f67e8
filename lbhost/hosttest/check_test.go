package hosttest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/lbhost/hostfiles"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/lbhost/transport"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestLBHostCheck runs `tfccm lbhost check`'s checks against a host
// prepared from lbhost/hostfiles' files with a sudo login: everything is ok;
// then each thing the check names is broken on the host in turn, the check
// reports exactly it (with a fix), and repaired, everything is ok again.
func TestLBHostCheck(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	hs, err := hosttest.Start(context.Background(), hosttest.Options{Cloud: cloud, Names: []string{"lb-a"}, Dir: t.TempDir(), SudoUser: sudoUser})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hs.Stop(); err != nil {
			t.Errorf("lbhosts: %v", err)
		}
	})
	h := hs.Hosts[0]
	// The targets come from a cloud config, as the command reads them.
	// A BGP host (settings.bgp): FRR's tools are checked too.
	settings := hs.LBSettings()
	settings["bgp"] = map[string]any{"asn": hosttest.HostASN}
	cfg, err := config.Parse([]byte("cluster_name = \"c1\"\ntemplate_set = \"baremetal\"\n"+harness.Block("load_balancer", settings)), "cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	targets, err := hostfiles.TargetsFromSettings(cfg.LoadBalancer.Settings)
	if err != nil {
		t.Fatal(err)
	}
	if len(targets) != 1 || !targets[0].BGP || !targets[0].SSH.Sudo || targets[0].SSH.User != sudoUser || targets[0].ConfigDir != h.ConfigDir {
		t.Fatalf("targets %+v", targets)
	}
	target := targets[0]
	check := func() map[string]hostfiles.Finding {
		t.Helper()
		ctx := context.Background()
		tr, err := transport.DialSSH(ctx, target.SSH)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		out := map[string]hostfiles.Finding{}
		for _, f := range hostfiles.Check(ctx, tr, target) {
			out[f.Check] = f
		}
		return out
	}
	allOK := func(when string) {
		t.Helper()
		fs := check()
		if len(fs) < 10 {
			t.Errorf("%s: only %d checks: %v", when, len(fs), fs)
		}
		for _, f := range fs {
			if !f.OK {
				t.Errorf("%s: %s: %s (fix: %s)", when, f.Check, f.What, f.Fix)
			}
		}
	}
	allOK("prepared from lbhost/hostfiles")

	base := filepath.Join(h.ConfigDir, "base.cfg")
	baseCfg, _ := os.ReadFile(base)
	kaCfg, _ := os.ReadFile(h.KeepalivedConfig)
	sysctl := func(v string) func() error {
		return func() error {
			return exec.Command("ip", "netns", "exec", h.Netns, "sysctl", "-qw", "net.ipv4.ip_nonlocal_bind="+v).Run()
		}
	}
	// nft and keepalived are binaries of this machine (the hosts share its
	// file system): they are shadowed in the mount namespace of the host's
	// sshd only, by a file that is not executable and by a keepalived
	// that is too old.
	files := t.TempDir()
	notExec, oldKeepalived := filepath.Join(files, "nft"), filepath.Join(files, "keepalived")
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(oldKeepalived, []byte("#!/bin/sh\necho 'Keepalived v1.3.5 (03/19,2017)' >&2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var unshadow func() error
	shadow := func(path, with string) func() error {
		return func() (err error) { unshadow, err = h.ShadowFile(path, with); return err }
	}
	repairShadow := func() error { return unshadow() }
	// /etc/group without group tfccm, and with it but without the login.
	noGroup, notMember := groupFiles(t, files)
	// Out of group tfccm: not a member, and (when tfccm lbhost prepare made
	// the login, with tfccm its primary group) another primary group.
	otherPrimary := passwdFile(t, files, sudoUser)
	shadowOutOfGroup := func() error {
		undoGroup, err := h.ShadowFile("/etc/group", notMember)
		if err != nil {
			return err
		}
		undoPasswd, err := h.ShadowFile("/etc/passwd", otherPrimary)
		if err != nil {
			_ = undoGroup()
			return err
		}
		unshadow = func() error { return errors.Join(undoPasswd(), undoGroup()) }
		return nil
	}
	keepalivedBin, err := exec.LookPath("keepalived")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		check, want    string
		break_, repair func() error
	}{
		{"sudo", "may not run as root through sudo -n", hs.RemoveSudoers, hs.InstallSudoers},
		{"net.ipv4.ip_nonlocal_bind", "is 0, not 1", sysctl("0"), sysctl("1")},
		{"keepalived include", "lacks \"include " + h.ConfigDir + "/keepalived/*.conf\"",
			func() error { return os.WriteFile(h.KeepalivedConfig, []byte("global_defs {\n}\n"), 0o600) },
			func() error { return os.WriteFile(h.KeepalivedConfig, kaCfg, 0o600) }},
		{"master socket", "master.sock", func() error { h.StopHAProxy(); return nil }, h.RestartHAProxy},
		{"config_dir", "missing " + h.ConfigDir + "/claims",
			func() error { return os.Remove(filepath.Join(h.ConfigDir, "claims")) },
			func() error { return os.Mkdir(filepath.Join(h.ConfigDir, "claims"), 0o755) }},
		{"base.cfg", "lacks \"load-server-state-from-file global\"",
			func() error {
				return os.WriteFile(base, []byte(strings.ReplaceAll(string(baseCfg), "load-server-state-from-file global", "")), 0o600)
			},
			func() error { return os.WriteFile(base, baseCfg, 0o600) }},
		{"haproxy", "does not say its version",
			func() error { target.HAProxy = "/usr/bin/ss"; return nil }, // a binary that is not HAProxy
			func() error { target.HAProxy = "haproxy"; return nil }},
		{"master socket", "group tfccm does not exist, so HAProxy cannot create its master socket",
			func() error { h.StopHAProxy(); return shadow("/etc/group", noGroup)() },
			func() error { _ = unshadow(); return h.RestartHAProxy() }},
		{"master socket", sudoUser + " is not in group tfccm", shadowOutOfGroup, repairShadow},
		{"nft", "/usr/sbin/nft is missing", shadow("/usr/sbin/nft", notExec), repairShadow},
		{"vtysh", "/usr/bin/vtysh is missing", shadow("/usr/bin/vtysh", notExec), repairShadow},
		{"frr-reload.py", "/usr/lib/frr/frr-reload.py is missing", shadow("/usr/lib/frr/frr-reload.py", notExec), repairShadow},
		{"keepalived", "keepalived 1.3.5 is older than 2.0", shadow(keepalivedBin, oldKeepalived), repairShadow},
	} {
		if err := b.break_(); err != nil {
			t.Fatalf("break %s: %v", b.check, err)
		}
		fs := check()
		for name, f := range fs {
			switch {
			case name == b.check && f.OK:
				t.Errorf("%s broken: reported ok (%s)", b.check, f.What)
			case name == b.check && (!strings.Contains(f.What, b.want) || f.Fix == ""):
				t.Errorf("%s broken: %q (fix %q), want %q and a fix", b.check, f.What, f.Fix, b.want)
			case name != b.check && !f.OK:
				t.Errorf("%s broken: %s also reported: %s", b.check, name, f.What)
			}
		}
		if _, ok := fs[b.check]; !ok {
			t.Errorf("%s broken: no such finding in %v", b.check, fs)
		}
		t.Logf("%s broken: %s; fix: %s", b.check, fs[b.check].What, fs[b.check].Fix)
		if err := b.repair(); err != nil {
			t.Fatalf("repair %s: %v", b.check, err)
		}
		allOK("after repairing " + b.check)
	}
}

// groupFiles writes two copies of this machine's /etc/group into dir: one
// without group tfccm (a host whose preparation forgot it), one where the
// group has no member (a sudo login left out of it).
func groupFiles(t *testing.T, dir string) (noGroup, notMember string) {
	t.Helper()
	b, err := os.ReadFile("/etc/group")
	if err != nil {
		t.Fatal(err)
	}
	var without, noMember []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Split(l, ":"); f[0] == hostfiles.SocketGroup && len(f) == 4 {
			noMember = append(noMember, strings.Join(f[:3], ":")+":")
			continue
		}
		without, noMember = append(without, l), append(noMember, l)
	}
	noGroup, notMember = filepath.Join(dir, "group-none"), filepath.Join(dir, "group-nomember")
	for p, lines := range map[string][]string{noGroup: without, notMember: noMember} {
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return noGroup, notMember
}

// passwdFile writes a copy of this machine's /etc/passwd into dir in which
// login's primary group is nogroup (65534) instead of group tfccm, the one
// tfccm lbhost prepare gives a login it creates.
func passwdFile(t *testing.T, dir, login string) string {
	t.Helper()
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if f := strings.Split(l, ":"); f[0] == login && len(f) == 7 {
			f[3] = "65534"
			lines[i] = strings.Join(f, ":")
		}
	}
	p := filepath.Join(dir, "passwd-otherprimary")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
