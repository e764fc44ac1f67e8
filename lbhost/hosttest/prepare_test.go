package hosttest_test

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/lbhost/hostfiles"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/lbhost/transport"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestPrepareHost: a host prepared by `tfccm lbhost prepare`'s script
// alone (every host of this package is) passes every check, for a root and
// a sudo login; the script run again changes no file and passes again.
func TestPrepareHost(t *testing.T) {
	for _, login := range []string{"root", sudoUser} {
		t.Run(login, func(t *testing.T) {
			cloud := localcloud.ForTest(t, localcloud.Options{})
			opts := hosttest.Options{Cloud: cloud, Names: []string{"lb-a"}, Dir: t.TempDir()}
			if login != "root" {
				opts.SudoUser = login
			}
			hs, err := hosttest.Start(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := hs.Stop(); err != nil {
					t.Errorf("lbhosts: %v", err)
				}
			})
			h := hs.Hosts[0]
			checkAllOK(t, hs, "prepared")
			before, err := h.SystemFiles()
			if err != nil {
				t.Fatal(err)
			}
			if len(before) < 5 {
				t.Fatalf("the preparation wrote only %v", slicesOfKeys(before))
			}
			out, err := h.Prepare(hs.PrivateKey + ".pub")
			if err != nil || !strings.Contains(out, "LB host lb-a prepared") {
				t.Fatalf("second run: %v: %s", err, out)
			}
			after, err := h.SystemFiles()
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(before, after) {
				for p, v := range after {
					if before[p] != v {
						t.Errorf("the second run changed %s:\n%s\nwas:\n%s", p, v, before[p])
					}
				}
				t.Errorf("the second run changed the files: %d before, %d after", len(before), len(after))
			}
			checkAllOK(t, hs, "prepared twice")
		})
	}
}

func slicesOfKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// checkAllOK runs `tfccm lbhost check`'s checks on every host of hs.
func checkAllOK(t *testing.T, hs *hosttest.Hosts, when string) {
	t.Helper()
	cfg, err := config.Parse([]byte("cluster_name = \"c1\"\ntemplate_set = \"baremetal\"\n"+harness.Block("load_balancer", hs.LBSettings())), "cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	targets, err := hostfiles.TargetsFromSettings(cfg.LoadBalancer.Settings)
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range targets {
		ctx := context.Background()
		tr, err := transport.DialSSH(ctx, target.SSH)
		if err != nil {
			t.Fatalf("%s: %s: %v", when, target.Name, err)
		}
		fs := hostfiles.Check(ctx, tr, target)
		tr.Close()
		if len(fs) < 10 {
			t.Errorf("%s: only %d checks: %v", when, len(fs), fs)
		}
		for _, f := range fs {
			if !f.OK {
				t.Errorf("%s: %s: %s: %s (fix: %s)", when, target.Name, f.Check, f.What, f.Fix)
			}
		}
	}
}

// TestHAProxyNeedsTheSocketGroup: with the shipped drop-in's master socket
// option (group tfccm), HAProxy starts where the group exists and does not
// start where it does not ("unknown group name"): the failure of a host
// prepared without the group, which a test host with another group hid.
func TestHAProxyNeedsTheSocketGroup(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	hs := hosttest.ForTest(t, cloud, "lb-a")
	h := hs.Hosts[0]
	dir := t.TempDir()
	var socket string
	args := h.HAProxyArgs()
	for i, a := range args {
		if i > 0 && args[i-1] == "-S" {
			if !strings.HasSuffix(a, ",group,"+hostfiles.SocketGroup) {
				t.Fatalf("the drop-in's master socket %q is not group %s", a, hostfiles.SocketGroup)
			}
			socket = filepath.Join(dir, "master.sock")
			_, opts, _ := strings.Cut(a, ",")
			socket += "," + opts
		}
	}
	if socket == "" {
		t.Fatalf("no -S in the drop-in's arguments %q", args)
	}
	cfg := filepath.Join(dir, "haproxy.cfg")
	group := filepath.Join(dir, "group")
	etcGroup, err := os.ReadFile("/etc/group")
	if err != nil {
		t.Fatal(err)
	}
	var without []string
	for _, l := range strings.Split(string(etcGroup), "\n") {
		if !strings.HasPrefix(l, hostfiles.SocketGroup+":") {
			without = append(without, l)
		}
	}
	if err := os.WriteFile(cfg, []byte("global\n    maxconn 16\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(group, []byte(strings.Join(without, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	haproxy := func(groupFile string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		script := `[ -z "$1" ] || mount --bind "$1" /etc/group; shift; exec "$@"`
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", h.Netns, "unshare", "--mount", "--", "sh", "-c", script, "sh", groupFile,
			"haproxy", "-W", "-S", socket, "-f", cfg)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// With the group, HAProxy runs until the timeout stops it.
	if out, err := haproxy(""); !strings.Contains(err.Error(), "killed") {
		t.Errorf("with group %s HAProxy stopped by itself: %v: %s", hostfiles.SocketGroup, err, out)
	}
	out, err := haproxy(group)
	if err == nil || strings.Contains(err.Error(), "killed") || !strings.Contains(out, "unknown group name") {
		t.Errorf("without group %s: %v: %s; want HAProxy to fail at once with \"unknown group name\"", hostfiles.SocketGroup, err, out)
	}
}

// TestFreshHostPreparedOverSSH: a fresh host (root's key the admin's,
// nothing else) is prepared as docs/quickstart-baremetal.md does it: the
// script piped into `ssh root@HOST sh`; with the services started from what
// it installed, every check passes at the default paths, for the sudo
// login the script created on that host alone.
func TestFreshHostPreparedOverSSH(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	hs, err := hosttest.Start(context.Background(), hosttest.Options{Cloud: cloud, Names: []string{"lb-a"}, Dir: t.TempDir(), Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hs.Stop(); err != nil {
			t.Errorf("lbhosts: %v", err)
		}
	})
	h := hs.Hosts[0]
	pub, err := os.ReadFile(hs.PrivateKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	const login = "tfccm"
	script, err := hostfiles.Preparation{Name: h.Name, User: login, AuthorizedKey: pub}.Script()
	if err != nil {
		t.Fatal(err)
	}
	known := filepath.Join(t.TempDir(), "known_hosts")
	for range 2 {
		cmd := exec.Command("ssh", "-i", hs.AdminKey, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new", "-o", "UserKnownHostsFile="+known,
			"root@"+h.Address, "sh")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ssh root@%s sh < script: %v: %s", h.Address, err, out)
		}
	}
	if err := h.StartServices(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.Command("getent", "passwd", login).Output(); err == nil {
		t.Logf("this machine has a user %s of its own (not the test's)", login)
	}
	target := hostfiles.Target{Name: h.Name, ConfigDir: hostfiles.DefaultConfigDir, HAProxy: "haproxy", KeepalivedConfig: hostfiles.KeepalivedConfig,
		SSH: transport.SSHConfig{Host: h.Address, Port: 22, User: login, Sudo: true, HostKey: h.HostKey, PrivateKeyFile: hs.PrivateKey}}
	ctx := context.Background()
	tr, err := transport.DialSSH(ctx, target.SSH)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	fs := hostfiles.Check(ctx, tr, target)
	if len(fs) < 10 {
		t.Errorf("only %d checks: %v", len(fs), fs)
	}
	for _, f := range fs {
		if !f.OK {
			t.Errorf("%s: %s (fix: %s)", f.Check, f.What, f.Fix)
		}
	}
}
