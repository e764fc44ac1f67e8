package tfprovider_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/lbhost/hosttest"
)

// startKeepalived runs keepalived in the cloud's namespace with a main
// configuration that includes lbhost's fragments.
func startKeepalived(t *testing.T, c *cloud) (config, pidFile string) {
	t.Helper()
	config, pidFile = filepath.Join(c.dir, "keepalived.conf"), filepath.Join(c.dir, "keepalived.pid")
	if err := os.MkdirAll(filepath.Join(c.dir, "keepalived"), 0o755); err != nil {
		t.Fatal(err)
	}
	main := hosttest.KeepalivedMain("lbhost_test", c.dir)
	if err := os.WriteFile(config, []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "ip", "netns", "exec", c.netns, "keepalived", "-f", config, "-p", pidFile,
		"-r", filepath.Join(c.dir, "vrrp.pid"), "-c", filepath.Join(c.dir, "checkers.pid"), "-l")
	t.Cleanup(func() { killPIDFile(pidFile) })
	for i := 0; i < 50; i++ {
		if _, err := os.Stat(pidFile); err == nil {
			return config, pidFile
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("keepalived did not start")
	return
}

func TestVRRPVIP(t *testing.T) {
	c := newCloud(t)
	config, pidFile := startKeepalived(t, c)
	cfg := func(priority int, peers string, extra ...string) string {
		return fmt.Sprintf(`
resource "lbhost_vip" "v" {
  owner     = "c1_ha"
  pool      = %q
  interface = %q
  vrrp = {
    interface         = %q
    virtual_router_id = 42
    priority          = %d
    peers             = [%s]
    %s
  }
}
output "vip" { value = lbhost_vip.v.address }
`, c.pool, c.link, c.link, priority, peers, strings.Join(extra, "\n    "))
	}
	w := newWorkspace(t, c, cfg(100, `"192.0.2.2"`))
	// write adds keepalived's paths to the workspace's provider block.
	write := func(priority int, peers string, extra ...string) {
		w.write(c, cfg(priority, peers, extra...))
		b := mustRead(t, filepath.Join(w.dir, "main.tf"))
		b = []byte(strings.Replace(string(b), "  config_dir = ", fmt.Sprintf("  keepalived_config   = %q\n  keepalived_pid_file = %q\n  config_dir = ", config, pidFile), 1))
		if err := os.WriteFile(filepath.Join(w.dir, "main.tf"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(100, `"192.0.2.2"`)
	w.apply()
	vip := w.output("vip")
	fragment := filepath.Join(c.dir, "keepalived", "c1_ha.conf")
	data, err := os.ReadFile(fragment)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"virtual_router_id 42", "priority 100", "nopreempt", "advert_int 1", "unicast_peer {\n        192.0.2.2\n", vip + "/32 dev " + c.link} {
		if !strings.Contains(string(data), want) {
			t.Errorf("fragment lacks %q:\n%s", want, data)
		}
	}
	hasVIP := func() bool {
		return strings.Contains(run(t, "ip", "-n", c.netns, "-4", "addr", "show", "dev", c.link), " "+vip+"/32 ")
	}
	// Alone in its group, keepalived becomes master after ~3 adverts.
	deadline := time.Now().Add(15 * time.Second)
	for !hasVIP() {
		if time.Now().After(deadline) {
			t.Fatalf("keepalived never configured %s", vip)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Priority and peers change in place.
	write(150, `"192.0.2.2", "192.0.2.3"`)
	if acts := w.planActions(); strings.Join(acts["lbhost_vip.v"], ",") != "update" {
		t.Fatalf("priority change: actions %v, want update", acts)
	}
	w.ok("apply", "-auto-approve", "-input=false", "-no-color", "plan.bin")
	if data, _ := os.ReadFile(fragment); !strings.Contains(string(data), "priority 150") || !strings.Contains(string(data), "192.0.2.3") {
		t.Fatalf("fragment not updated:\n%s", data)
	}
	if got := w.output("vip"); got != vip {
		t.Fatalf("VIP changed from %s to %s on an in-place update", vip, got)
	}

	// Edited behind its back: a diff; apply restores it.
	edited := strings.Replace(string(mustRead(t, fragment)), "priority 150", "priority 10", 1)
	if err := os.WriteFile(fragment, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, code := w.cmd("plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 2 {
		t.Fatalf("plan after editing the VRRP fragment: exit %d, want 2", code)
	}
	w.apply()
	if data := mustRead(t, fragment); !strings.Contains(string(data), "priority 150") {
		t.Fatalf("fragment not restored:\n%s", data)
	}

	// Removed behind its back, the claim left: kept in state (a destroy
	// would release the claim), restored in place with its address.
	if err := os.Remove(fragment); err != nil {
		t.Fatal(err)
	}
	if acts := w.planActions(); strings.Join(acts["lbhost_vip.v"], ",") != "update" {
		t.Fatalf("VRRP fragment removed: actions %v, want update", acts)
	}
	w.ok("apply", "-auto-approve", "-input=false", "-no-color", "plan.bin")
	if data := mustRead(t, fragment); !strings.Contains(string(data), "priority 150") || !strings.Contains(string(data), vip+"/32") {
		t.Fatalf("fragment not restored:\n%s", data)
	}
	if got := w.output("vip"); got != vip {
		t.Fatalf("VIP changed from %s to %s when restored", vip, got)
	}

	// Import adopts the VIP with its VRRP instance: no changes to plan.
	imp := newWorkspace(t, c, cfg(150, `"192.0.2.2", "192.0.2.3"`))
	{
		b := mustRead(t, filepath.Join(imp.dir, "main.tf"))
		b = []byte(strings.Replace(string(b), "  config_dir = ", fmt.Sprintf("  keepalived_config   = %q\n  keepalived_pid_file = %q\n  config_dir = ", config, pidFile), 1))
		if err := os.WriteFile(filepath.Join(imp.dir, "main.tf"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	imp.ok("import", "-input=false", "-no-color", "lbhost_vip.v", "c1_ha,"+c.pool)
	if out, code := imp.cmd("plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
		t.Fatalf("plan after importing the VRRP VIP: exit %d\n%s", code, out)
	}

	// A unicast source needs peers: without them keepalived's check would
	// reject the instance at apply, so the plan fails naming the field.
	write(150, ``, `source_address = "192.0.2.1"`)
	if out, code := w.cmd("plan", "-input=false", "-no-color"); code == 0 || !strings.Contains(out, "vrrp.source_address") || !strings.Contains(out, "peers") {
		t.Fatalf("plan with a source address and no peers: exit %d\n%s", code, out)
	}

	// A bad peer fails at plan and changes nothing.
	write(150, `"192.0.2.2 }"`)
	if out, code := w.cmd("plan", "-input=false", "-no-color"); code == 0 || !strings.Contains(out, "peers") {
		t.Fatalf("plan with a bad peer: exit %d\n%s", code, out)
	}

	write(150, `"192.0.2.2", "192.0.2.3"`)
	w.ok("destroy", "-auto-approve", "-input=false", "-no-color")
	if _, err := os.Stat(fragment); !os.IsNotExist(err) {
		t.Fatalf("VRRP fragment left after destroy: %v", err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for hasVIP() {
		if time.Now().After(deadline) {
			t.Fatalf("keepalived still holds %s after destroy", vip)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVRRPRouterIDAllocation: unset virtual_router_id is allocated from
// virtual_router_id_range with the address (the lowest id no other lbhost
// instance on the interface uses), kept across applies, and a range used
// up or an id taken by another owner fails naming the field.
func TestVRRPRouterIDAllocation(t *testing.T) {
	c := newCloud(t)
	config, pidFile := startKeepalived(t, c)
	vip := func(owner, vrid string) string {
		return fmt.Sprintf(`
resource "lbhost_vip" %[1]q {
  owner     = %[1]q
  pool      = %[2]q
  interface = %[3]q
  vrrp = {
    interface               = %[3]q
    virtual_router_id_range = "42-43"
    %[4]s
  }
}
output %[1]q { value = lbhost_vip.%[1]s.vrrp.virtual_router_id }
`, owner, c.pool, c.link, vrid)
	}
	newWS := func(body string) *workspace {
		w := newWorkspace(t, c, body)
		b := mustRead(t, filepath.Join(w.dir, "main.tf"))
		b = []byte(strings.Replace(string(b), "  config_dir = ", fmt.Sprintf("  keepalived_config   = %q\n  keepalived_pid_file = %q\n  config_dir = ", config, pidFile), 1))
		if err := os.WriteFile(filepath.Join(w.dir, "main.tf"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := newWS(vip("a", "") + vip("b", ""))
	w.apply()
	got := []string{w.output("a"), w.output("b")}
	sort.Strings(got)
	if strings.Join(got, ",") != "42,43" {
		t.Fatalf("allocated ids %v, want 42 and 43", got)
	}
	if out, code := w.cmd("plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
		t.Fatalf("plan after allocating: exit %d\n%s", code, out)
	}
	full := newWS(vip("c", ""))
	if out, code := full.cmd("apply", "-auto-approve", "-input=false", "-no-color"); code == 0 || !strings.Contains(out, "every virtual router id of 42-43 is used") {
		t.Fatalf("apply with the range used up: exit %d\n%s", code, out)
	}
	taken := newWS(vip("d", "virtual_router_id = "+w.output("a")))
	if out, code := taken.cmd("apply", "-auto-approve", "-input=false", "-no-color"); code == 0 || !strings.Contains(out, "vrrp.virtual_router_id") || !strings.Contains(out, "already used by load balancer a") {
		t.Fatalf("apply with another owner's id: exit %d\n%s", code, out)
	}
	if claims, _ := os.ReadDir(filepath.Join(c.dir, "claims")); len(claims) != 2 {
		t.Errorf("claims after the refused applies: %d, want 2 (nothing changed)", len(claims))
	}
	w.ok("destroy", "-auto-approve", "-input=false", "-no-color")
}
