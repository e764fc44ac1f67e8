package tfprovider_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/lbhost/mirror"
	"github.com/tfccm/tfccm/lbhost/tfprovider"
)

// cliConfig is the CLI configuration every test's tofu uses: the provider
// built once by TestMain into a private filesystem mirror.
var cliConfig string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "lbhost-mirror-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		bin := mirror.BinaryPath(filepath.Join(dir, "providers"), mirror.Source, tfprovider.Version)
		if err := repo.BuildTo("./lbhost/cmd/terraform-provider-lbhost", bin); err != nil {
			fmt.Fprintln(os.Stderr, "build provider:", err)
			return 1
		}
		tfBin := mirror.BinaryPath(filepath.Join(dir, "providers"), mirror.TerraformSource, tfprovider.Version)
		if err := os.MkdirAll(filepath.Dir(tfBin), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := os.Link(bin, tfBin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		cliConfig = filepath.Join(dir, "tofurc")
		if err := os.WriteFile(cliConfig, []byte(mirror.CLIConfig(filepath.Join(dir, "providers"))), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}())
}

// cloud is a throwaway load-balancer host: a netns running HAProxy in
// master-worker mode with the local cloud's layout in dir, a veth to the
// host (host side: two "node" addresses), a host route to the VIP pool.
type cloud struct {
	netns, dir, pool string
	nodeA, nodeB     string // host-side addresses that act as nodes
	gateway          string // the netns side of the veth
	link             string // the veth's name inside the netns
}

const slotLock = "/run/tfccm-lbhost-test.lock"

func run(t *testing.T, argv ...string) string {
	t.Helper()
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

func newCloud(t *testing.T) *cloud {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the lbhost integration tests need root (network namespaces, HAProxy)")
	}
	lf, err := os.OpenFile(slotLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	k := freeSlot(t)
	id := make([]byte, 3)
	_, _ = rand.Read(id)
	prefix := "lbt" + hex.EncodeToString(id)
	c := &cloud{
		netns: prefix + "-c", pool: fmt.Sprintf("10.78.%d.0/24", k),
		nodeA: fmt.Sprintf("10.77.%d.1", k), nodeB: fmt.Sprintf("10.77.%d.3", k), gateway: fmt.Sprintf("10.77.%d.2", k),
		dir: t.TempDir(),
	}
	hostLink, peer := prefix+"-h", prefix+"-p"
	c.link = peer
	t.Cleanup(func() {
		_ = exec.Command("ip", "route", "del", c.pool).Run()
		_ = exec.Command("ip", "link", "del", hostLink).Run()
		_ = exec.Command("ip", "netns", "del", c.netns).Run()
	})
	run(t, "ip", "netns", "add", c.netns)
	run(t, "ip", "-n", c.netns, "link", "set", "lo", "up")
	run(t, "ip", "link", "add", hostLink, "type", "veth", "peer", "name", peer, "netns", c.netns)
	run(t, "ip", "addr", "add", c.nodeA+"/24", "dev", hostLink)
	run(t, "ip", "addr", "add", c.nodeB+"/24", "dev", hostLink)
	run(t, "ip", "link", "set", hostLink, "up")
	run(t, "ip", "-n", c.netns, "addr", "add", c.gateway+"/24", "dev", peer)
	run(t, "ip", "-n", c.netns, "link", "set", peer, "up")
	run(t, "ip", "route", "add", c.pool, "via", c.gateway, "dev", hostLink)

	for _, d := range []string{"fragments", "claims"} {
		if err := os.MkdirAll(filepath.Join(c.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	base := hosttest.HAProxyBase(c.dir)
	if err := os.WriteFile(filepath.Join(c.dir, "base.cfg"), []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "ip", "netns", "exec", c.netns, "haproxy", "-W", "-D", "-S", c.dir+"/master.sock,mode,600",
		"-p", c.dir+"/haproxy.pid", "-f", c.dir+"/base.cfg", "-f", c.dir+"/fragments")
	t.Cleanup(func() { killPIDFile(filepath.Join(c.dir, "haproxy.pid")) })
	if err := hosttest.WaitHAProxy(filepath.Join(c.dir, "master.sock"), 15*time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

// freeSlot picks k such that 10.77.k.0/24 and 10.78.k.0/24 overlap no route.
func freeSlot(t *testing.T) int {
	out := run(t, "ip", "-4", "route", "show", "table", "all")
	var used []netip.Prefix
	for _, line := range strings.Split(out, "\n") {
		for _, f := range strings.Fields(line) {
			if !strings.Contains(f, ".") {
				continue
			}
			if !strings.Contains(f, "/") {
				f += "/32"
			}
			if p, err := netip.ParsePrefix(f); err == nil && p.Bits() > 0 {
				used = append(used, p.Masked())
			}
		}
	}
	for k := 0; k < 256; k++ {
		a, b := netip.MustParsePrefix(fmt.Sprintf("10.77.%d.0/24", k)), netip.MustParsePrefix(fmt.Sprintf("10.78.%d.0/24", k))
		ok := true
		for _, u := range used {
			if u.Overlaps(a) || u.Overlaps(b) {
				ok = false
			}
		}
		if ok {
			return k
		}
	}
	t.Fatal("no free 10.77.k.0/24 + 10.78.k.0/24 slot")
	return 0
}

// serve answers every HTTP request with name, on addr.
func serve(t *testing.T, addr, name string) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, name) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

// get fetches url once (a new connection every time).
func get(url string) (string, error) {
	return testkit.Get(context.Background(), testkit.NewClient(2*time.Second), url)
}

// workspace is one tofu working directory.
type workspace struct {
	t    *testing.T
	dir  string
	tofu string
}

func newWorkspace(t *testing.T, c *cloud, body string) *workspace {
	t.Helper()
	return newWorkspaceWith(t, repo.Tofu(t), c, body)
}

// newWorkspaceWith uses another binary (Terraform) instead of OpenTofu.
func newWorkspaceWith(t *testing.T, binary string, c *cloud, body string) *workspace {
	t.Helper()
	w := &workspace{t: t, dir: t.TempDir(), tofu: binary}
	w.write(c, body)
	w.ok("init", "-input=false", "-no-color")
	return w
}

func (w *workspace) write(c *cloud, body string) {
	w.t.Helper()
	head := fmt.Sprintf(`terraform {
  required_providers {
    lbhost = { source = "tfccm/lbhost" }
  }
}

provider "lbhost" {
  netns      = %q
  config_dir = %q
}
`, c.netns, c.dir)
	if err := os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(head+body), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// cmd runs tofu; it returns stdout+stderr and the exit code.
func (w *workspace) cmd(args ...string) (string, int) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := testkit.Tofu{Binary: w.tofu, Dir: w.dir, CLIConfig: cliConfig}.Command(ctx, args...)
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return string(out), code
}

func (w *workspace) ok(args ...string) string {
	w.t.Helper()
	out, code := w.cmd(args...)
	if code != 0 {
		w.t.Fatalf("tofu %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

func (w *workspace) apply() string {
	return w.ok("apply", "-auto-approve", "-input=false", "-no-color")
}

// planActions plans to a file and returns each resource address's actions.
func (w *workspace) planActions() map[string][]string {
	w.t.Helper()
	w.ok("plan", "-input=false", "-no-color", "-out=plan.bin")
	js := w.ok("show", "-json", "plan.bin")
	var p struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions []string `json:"actions"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		w.t.Fatalf("plan json: %v", err)
	}
	out := map[string][]string{}
	for _, rc := range p.ResourceChanges {
		out[rc.Address] = rc.Change.Actions
	}
	return out
}

// output returns a root module output as a string.
func (w *workspace) output(name string) string {
	w.t.Helper()
	return strings.TrimSpace(w.ok("output", "-raw", name))
}

// killPIDFile stops the process whose pid file this test wrote.
func killPIDFile(file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		return
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil || pid <= 1 {
		return
	}
	_ = unix.Kill(pid, unix.SIGTERM)
	for i := 0; i < 50 && unix.Kill(pid, 0) == nil; i++ {
		time.Sleep(50 * time.Millisecond)
	}
}
