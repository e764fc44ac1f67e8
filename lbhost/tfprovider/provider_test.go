package tfprovider_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/testkit"
)

// lbConfig is a VIP and a frontend on it with the given backends.
func lbConfig(c *cloud, backends []string, extra string) string {
	return fmt.Sprintf(`
resource "lbhost_vip" "vip" {
  owner = "c1_web"
  pool  = %q
}

resource "lbhost_frontend" "web" {
  name    = "c1_web"
  address = lbhost_vip.vip.address
  ports = [{ port = 80, node_port = 30080 }]
  backends = [%s]
  health_check = { protocol = "HTTP", path = "/healthz", interval = "200ms", rise = 1, fall = 1 }
%s
}

output "vip" { value = lbhost_vip.vip.address }
`, c.pool, strings.Join(backends, ", "), extra)
}

func backend(name, addr string) string { return fmt.Sprintf("{ name = %q, address = %q }", name, addr) }

// waitFor polls url until every name in want answered, or fails.
func waitFor(t *testing.T, url string, want ...string) {
	t.Helper()
	seen := map[string]bool{}
	err := testkit.Poll(context.Background(), testkit.Interval, 15*time.Second, url+" answered by all of "+strings.Join(want, ", "), func(context.Context) error {
		body, err := get(url)
		if err != nil {
			return err
		}
		seen[body] = true
		for _, w := range want {
			if !seen[w] {
				return fmt.Errorf("seen %v", seen)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFrontendLifecycle(t *testing.T) {
	c := newCloud(t)
	serve(t, c.nodeA+":30080", "node-a")
	serve(t, c.nodeB+":30080", "node-b")
	w := newWorkspace(t, c, lbConfig(c, []string{backend("node-a", c.nodeA)}, ""))

	// Create: the VIP is allocated at apply time and the frontend answers.
	out := w.apply()
	vip := w.output("vip")
	if a, err := netip.ParseAddr(vip); err != nil || !netip.MustParsePrefix(c.pool).Contains(a) {
		t.Fatalf("vip %q is not an address of the pool %s\n%s", vip, c.pool, out)
	}
	url := "http://" + vip + "/"
	waitFor(t, url, "node-a")
	fragment := filepath.Join(c.dir, "fragments", "c1_web.cfg")

	t.Run("node joining is an in-place update", func(t *testing.T) {
		w.write(c, lbConfig(c, []string{backend("node-a", c.nodeA), backend("node-b", c.nodeB)}, ""))
		acts := w.planActions()
		if got := strings.Join(acts["lbhost_frontend.web"], ","); got != "update" {
			t.Fatalf("frontend actions = %q, want update (all: %v)", got, acts)
		}
		if got := strings.Join(acts["lbhost_vip.vip"], ","); got != "no-op" {
			t.Fatalf("vip actions = %q, want no-op", got)
		}
		text := w.ok("show", "-no-color", "plan.bin")
		if !strings.Contains(text, `+ {`) || !strings.Contains(text, `+ name    = "node-b"`) {
			t.Errorf("plan does not show one added backend:\n%s", text)
		}
		w.ok("apply", "-auto-approve", "-input=false", "-no-color", "plan.bin")
		waitFor(t, url, "node-a", "node-b")
	})

	t.Run("fragment removed behind its back is a diff and apply restores it", func(t *testing.T) {
		if err := os.Remove(fragment); err != nil {
			t.Fatal(err)
		}
		if _, code := w.cmd("plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 2 {
			t.Fatalf("plan after removing the fragment: exit %d, want 2 (changes)", code)
		}
		w.apply()
		if _, err := os.Stat(fragment); err != nil {
			t.Fatalf("fragment not restored: %v", err)
		}
		waitFor(t, url, "node-a", "node-b")
		if out, code := w.cmd("plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
			t.Fatalf("plan after repair: exit %d, want 0\n%s", code, out)
		}
	})

	t.Run("edited fragment is a diff", func(t *testing.T) {
		data, _ := os.ReadFile(fragment)
		edited := strings.Replace(string(data), "    server node-b "+c.nodeB+":30080\n", "", 1)
		if edited == string(data) {
			t.Fatal("test bug: edit changed nothing")
		}
		if err := os.WriteFile(fragment, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		out, code := w.cmd("plan", "-detailed-exitcode", "-input=false", "-no-color")
		if code != 2 {
			t.Fatalf("plan after editing the fragment: exit %d, want 2\n%s", code, out)
		}
		w.apply()
		if got, _ := os.ReadFile(fragment); string(got) != string(data) {
			t.Fatalf("fragment not restored:\n%s", got)
		}
	})

	t.Run("bad value at plan names the field and changes nothing", func(t *testing.T) {
		before, _ := os.ReadFile(fragment)
		w.write(c, lbConfig(c, []string{backend("node-a", c.nodeA)}, `  timeouts = { server = "5 s" }`))
		out, code := w.cmd("plan", "-input=false", "-no-color")
		if code == 0 || !strings.Contains(out, "timeouts.server") {
			t.Fatalf("plan with a bad timeout: exit %d, want an error naming timeouts.server\n%s", code, out)
		}
		if after, _ := os.ReadFile(fragment); string(after) != string(before) {
			t.Fatal("fragment changed")
		}
	})

	t.Run("value HAProxy rejects leaves the running config untouched", func(t *testing.T) {
		before, _ := os.ReadFile(fragment)
		// Passes the schema's check, but overflows HAProxy's timers.
		w.write(c, lbConfig(c, []string{backend("node-a", c.nodeA)}, `  timeouts = { server = "999999999d" }`))
		out, code := w.cmd("apply", "-auto-approve", "-input=false", "-no-color")
		if code == 0 || !strings.Contains(out, "HAProxy rejected the configuration") {
			t.Fatalf("apply with an overflowing timeout: exit %d, want HAProxy's rejection\n%s", code, out)
		}
		if after, _ := os.ReadFile(fragment); string(after) != string(before) {
			t.Fatalf("fragment changed:\n%s", after)
		}
		waitFor(t, url, "node-a", "node-b") // the old config (two nodes) still serves
		w.write(c, lbConfig(c, []string{backend("node-a", c.nodeA), backend("node-b", c.nodeB)}, ""))
		if out, code := w.cmd("plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
			t.Fatalf("plan back at the applied config: exit %d, want 0\n%s", code, out)
		}
	})

	t.Run("a VIP:port taken by another load balancer is refused, naming the field", func(t *testing.T) {
		other := newWorkspace(t, c, fmt.Sprintf(`
resource "lbhost_frontend" "other" {
  name    = "c1_other"
  address = %q
  ports   = [{ port = 8080, node_port = 30080 }, { port = 80, node_port = 30080 }]
}
`, vip))
		out, code := other.cmd("apply", "-auto-approve", "-input=false", "-no-color")
		if code == 0 || !strings.Contains(out, "ports[1].port") || !strings.Contains(out, "already used by load balancer c1_web") {
			t.Fatalf("apply binding a taken VIP:port: exit %d\n%s", code, out)
		}
		if _, err := os.Stat(filepath.Join(c.dir, "fragments", "c1_other.cfg")); !os.IsNotExist(err) {
			t.Fatalf("refused load balancer wrote a fragment: %v", err)
		}
		waitFor(t, url, "node-a", "node-b")
	})

	t.Run("import by id", func(t *testing.T) {
		imp := newWorkspace(t, c, lbConfig(c, []string{backend("node-a", c.nodeA), backend("node-b", c.nodeB)}, ""))
		imp.ok("import", "-input=false", "-no-color", "lbhost_vip.vip", "c1_web,"+c.pool)
		imp.ok("import", "-input=false", "-no-color", "lbhost_frontend.web", "c1_web")
		if out, code := imp.cmd("plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
			t.Fatalf("plan after import: exit %d, want 0 (no changes)\n%s", code, out)
		}
		if got := imp.output("vip"); got != vip {
			// outputs are only known after a refresh/apply of outputs
			imp.ok("apply", "-refresh-only", "-auto-approve", "-input=false", "-no-color")
			if got = imp.output("vip"); got != vip {
				t.Fatalf("imported vip = %q, want %q", got, vip)
			}
		}
	})

	t.Run("destroy removes exactly its own objects", func(t *testing.T) {
		other := filepath.Join(c.dir, "fragments", "someone_else.cfg")
		if err := os.WriteFile(other, []byte("# not lbhost's\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		w.ok("destroy", "-auto-approve", "-input=false", "-no-color")
		if _, err := os.Stat(fragment); !os.IsNotExist(err) {
			t.Errorf("fragment still there: %v", err)
		}
		if _, err := os.Stat(filepath.Join(c.dir, "claims", vip)); !os.IsNotExist(err) {
			t.Errorf("claim still there: %v", err)
		}
		if _, err := os.Stat(other); err != nil {
			t.Errorf("another fragment was removed: %v", err)
		}
		if addrs := run(t, "ip", "-n", c.netns, "-4", "addr", "show", "dev", "lo"); strings.Contains(addrs, " "+vip+"/32") {
			t.Errorf("VIP still on lo:\n%s", addrs)
		}
		if _, err := get(url); err == nil {
			t.Errorf("%s still answers", url)
		}
	})
}

func TestConcurrentVIPsAreDistinct(t *testing.T) {
	c := newCloud(t)
	// A /27 (30 addresses) for 20 owners: probes collide, the lock decides.
	pool := strings.TrimSuffix(c.pool, "/24") + "/27"
	const n = 20
	ws := make([]*workspace, n)
	for i := range ws {
		ws[i] = newWorkspace(t, c, fmt.Sprintf(`
resource "lbhost_vip" "v" {
  owner = "c1_lb%d"
  pool  = %q
}
output "vip" { value = lbhost_vip.v.address }
`, i, pool))
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]string, n)
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, code := w.cmd("apply", "-auto-approve", "-input=false", "-no-color"); code != 0 {
				errs[i] = out
			}
		}()
	}
	wg.Wait()
	t.Logf("%d concurrent applies took %s", n, time.Since(start).Round(time.Millisecond))
	seen := map[string]int{}
	for i, w := range ws {
		if errs[i] != "" {
			t.Fatalf("apply %d failed:\n%s", i, errs[i])
		}
		a := w.output("vip")
		if p, err := netip.ParseAddr(a); err != nil || !netip.MustParsePrefix(pool).Contains(p) {
			t.Errorf("owner %d got %q, not in %s", i, a, pool)
		}
		if j, dup := seen[a]; dup {
			t.Errorf("owners %d and %d both got %s", j, i, a)
		}
		seen[a] = i
		claim, err := os.ReadFile(filepath.Join(c.dir, "claims", a))
		if err != nil || strings.TrimSpace(string(claim)) != fmt.Sprintf("c1_lb%d", i) {
			t.Errorf("claim %s = %q, %v; want c1_lb%d", a, claim, err, i)
		}
	}
	addrs := run(t, "ip", "-n", c.netns, "-4", "addr", "show", "dev", "lo")
	for a := range seen {
		if !strings.Contains(addrs, " "+a+"/32") {
			t.Errorf("%s not configured in the cloud namespace", a)
		}
	}

	// A requested address owned by someone else fails at plan, naming it.
	taken := ws[0].output("vip")
	w := newWorkspace(t, c, fmt.Sprintf(`
resource "lbhost_vip" "v" {
  owner   = "c1_thief"
  pool    = %q
  address = %q
}
`, pool, taken))
	out, code := w.cmd("plan", "-input=false", "-no-color")
	if code == 0 || !strings.Contains(out, "already used by load balancer c1_lb0") || !strings.Contains(out, "address") {
		t.Fatalf("plan requesting a taken address: exit %d, want an error naming the owner\n%s", code, out)
	}
	w.write(c, fmt.Sprintf(`
resource "lbhost_vip" "v" {
  owner   = "c1_thief"
  pool    = %q
  address = "10.99.0.1"
}
`, pool))
	out, code = w.cmd("plan", "-input=false", "-no-color")
	if code == 0 || !strings.Contains(out, "outside the VIP pool") {
		t.Fatalf("plan requesting an address outside the pool: exit %d\n%s", code, out)
	}

	// A VIP removed behind its back is re-added with the same address.
	run(t, "ip", "-n", c.netns, "addr", "del", taken+"/32", "dev", "lo")
	if _, code := ws[0].cmd("plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 2 {
		t.Fatalf("plan after deleting the VIP: exit %d, want 2", code)
	}
	ws[0].apply()
	if got := ws[0].output("vip"); got != taken {
		t.Errorf("restored VIP = %s, want %s", got, taken)
	}
}

func TestRoute(t *testing.T) {
	c := newCloud(t)
	cfg := func(gw string) string {
		return fmt.Sprintf(`
resource "lbhost_route" "pods" {
  destination = "10.244.7.0/24"
  gateway     = %q
}
resource "lbhost_route" "hole" {
  destination = "10.244.8.0/24"
  blackhole   = true
}
`, gw)
	}
	w := newWorkspace(t, c, cfg(c.nodeA))
	w.apply()
	show := func() string { return run(t, "ip", "-n", c.netns, "-4", "route", "show") }
	if r := show(); !strings.Contains(r, "10.244.7.0/24 via "+c.nodeA) || !strings.Contains(r, "blackhole 10.244.8.0/24") {
		t.Fatalf("routes not created:\n%s", r)
	}
	w.write(c, cfg(c.nodeB))
	if acts := w.planActions(); strings.Join(acts["lbhost_route.pods"], ",") != "update" {
		t.Fatalf("gateway change actions = %v, want update", acts)
	}
	w.ok("apply", "-auto-approve", "-input=false", "-no-color", "plan.bin")
	if r := show(); !strings.Contains(r, "10.244.7.0/24 via "+c.nodeB) {
		t.Fatalf("route not retargeted:\n%s", r)
	}
	run(t, "ip", "-n", c.netns, "route", "del", "10.244.7.0/24")
	if acts := w.planActions(); strings.Join(acts["lbhost_route.pods"], ",") != "create" {
		t.Fatalf("after deleting the route behind its back: actions %v, want create", acts)
	}
	w.ok("apply", "-auto-approve", "-input=false", "-no-color", "plan.bin")
	imp := newWorkspace(t, c, cfg(c.nodeB))
	imp.ok("import", "-input=false", "-no-color", "lbhost_route.pods", "10.244.7.0/24")
	imp.ok("import", "-input=false", "-no-color", "lbhost_route.hole", "10.244.8.0/24")
	if out, code := imp.cmd("plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
		t.Fatalf("plan after import: exit %d\n%s", code, out)
	}
	w.ok("destroy", "-auto-approve", "-input=false", "-no-color")
	if r := show(); strings.Contains(r, "10.244.") {
		t.Fatalf("routes left after destroy:\n%s", r)
	}
}

// TestVIPNeverTakesAHostsAddress: a pool that covers the hosts' subnet
// never hands out the host's own address (seen on its interfaces) nor one
// listed in the provider's reserved_addresses (another host's, which this
// one cannot see); requested, the host's own is refused, and nothing is
// claimed by a refused apply.
func TestVIPNeverTakesAHostsAddress(t *testing.T) {
	c := newCloud(t)
	// 10.77.k.0/30: .1 (another host's, nodeA) and .2 (the namespace's own,
	// the gateway, a /24 on its link).
	pool := strings.TrimSuffix(c.gateway, ".2") + ".0/30"
	vip := func(owner, address string) string {
		b := fmt.Sprintf("resource \"lbhost_vip\" \"v\" {\n  owner = %q\n  pool  = %q\n", owner, pool)
		if address != "" {
			b += fmt.Sprintf("  address = %q\n", address)
		}
		return b + "}\noutput \"vip\" { value = lbhost_vip.v.address }\n"
	}

	reserved := newWorkspace(t, c, vip("c1_a", ""))
	main := filepath.Join(reserved.dir, "main.tf")
	b, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	withReserved := strings.Replace(string(b), "provider \"lbhost\" {\n", fmt.Sprintf("provider \"lbhost\" {\n  reserved_addresses = [%q, \"lb-b.example\"]\n", c.nodeA), 1)
	if withReserved == string(b) {
		t.Fatal("no provider block to add reserved_addresses to")
	}
	if err := os.WriteFile(main, []byte(withReserved), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := reserved.cmd("apply", "-auto-approve", "-input=false", "-no-color")
	if code == 0 || !strings.Contains(out, "is exhausted") || !strings.Contains(out, "reserved") {
		t.Fatalf("apply with every address reserved or the host's own: exit %d, want the pool exhausted\n%s", code, out)
	}
	if names, _ := os.ReadDir(filepath.Join(c.dir, "claims")); len(names) != 0 {
		t.Fatalf("a refused apply left claims: %v", names)
	}

	free := newWorkspace(t, c, vip("c1_b", ""))
	free.apply()
	if got := free.output("vip"); got != c.nodeA {
		t.Fatalf("allocated %s, want %s (%s is the host's own)", got, c.nodeA, c.gateway)
	}

	own := newWorkspace(t, c, vip("c1_c", c.gateway))
	out, code = own.cmd("apply", "-auto-approve", "-input=false", "-no-color")
	if code == 0 || !strings.Contains(out, c.gateway+" is the address of netns "+c.netns+" itself") {
		t.Fatalf("apply requesting the host's own address: exit %d, want it refused\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "claims", c.gateway)); err == nil {
		t.Errorf("the host's own address %s was claimed", c.gateway)
	}
}
