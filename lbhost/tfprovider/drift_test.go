package tfprovider_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// TestDriftedFrontendIsDestroyed: a fragment on the host that is not in
// effect (HAProxy has not loaded it, or it cannot be read back) is an
// in-place update in the next plan, which the apply repairs, and a
// destroy removes it with the rest. Dropped from state by the refresh, it
// was left on the host by the destroy, its VIP released: a load balancer
// the user believes deleted, still bound to an address the next one gets.
func TestDriftedFrontendIsDestroyed(t *testing.T) {
	c := newCloud(t)
	serve(t, c.nodeA+":30080", "node-a")
	fragment := filepath.Join(c.dir, "fragments", "c1_web.cfg")
	h, err := host.New(&transport.Netns{Name: c.netns}, c.dir)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorkspace(t, c, lbConfig(c, []string{backend("node-a", c.nodeA)}, ""))
	w.apply()
	vip := w.output("vip")
	applied, err := os.ReadFile(fragment)
	if err != nil {
		t.Fatal(err)
	}

	// Unreadable: a diff, repaired by the next apply.
	if err := os.WriteFile(fragment, []byte("# edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(w.planActions()["lbhost_frontend.web"], ","); got != "update" {
		t.Errorf("frontend actions with its fragment unreadable = %q, want update", got)
	}
	w.apply()
	waitFor(t, "http://"+vip+"/", "node-a")

	// Not loaded (as a destroy's refresh can see it while another load
	// balancer's change reloads HAProxy): unloaded, put back, destroyed.
	if err := h.DeleteFrontend(context.Background(), "c1_web"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fragment, applied, 0o644); err != nil {
		t.Fatal(err)
	}
	w.ok("destroy", "-auto-approve", "-input=false", "-no-color")
	leftBehind(t, fragment, "fragment")
	leftBehind(t, filepath.Join(c.dir, "claims", vip), "claim on "+vip)
}

// leftBehind fails t when the destroy left the file at path (what names
// it) on the host.
func leftBehind(t *testing.T, path, what string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s left on the host by the destroy (%v)", what, err)
	}
}

// TestDriftedVIPIsDestroyed: a VIP whose address or claim was removed on
// the host is an in-place update in the next plan, which restores it with
// the same address; a destroy removes what is left of it (dropped from
// state by the refresh, an address without its claim stayed configured).
// Only a VIP of which nothing is left is created again.
func TestDriftedVIPIsDestroyed(t *testing.T) {
	c := newCloud(t)
	w := newWorkspace(t, c, fmt.Sprintf(`
resource "lbhost_vip" "vip" {
  owner = "c1_drift"
  pool  = %q
}
output "vip" { value = lbhost_vip.vip.address }
`, c.pool))
	w.apply()
	vip := w.output("vip")
	claim := filepath.Join(c.dir, "claims", vip)
	configured := func() bool {
		return strings.Contains(run(t, "ip", "-n", c.netns, "-4", "addr", "show", "dev", "lo"), " "+vip+"/32")
	}
	actions := func() string { return strings.Join(w.planActions()["lbhost_vip.vip"], ",") }

	// The address removed, the claim left: restored in place.
	run(t, "ip", "-n", c.netns, "addr", "del", vip+"/32", "dev", "lo")
	if got := actions(); got != "update" {
		t.Errorf("VIP actions with its address removed = %q, want update", got)
	}
	w.apply()
	if got := w.output("vip"); got != vip || !configured() {
		t.Errorf("after the apply: VIP %s (configured %v), want %s configured again", got, configured(), vip)
	}

	// Nothing left: created again.
	if err := os.Remove(claim); err != nil {
		t.Fatal(err)
	}
	run(t, "ip", "-n", c.netns, "addr", "del", vip+"/32", "dev", "lo")
	if got := actions(); got != "create" {
		t.Errorf("VIP actions with nothing of it left = %q, want create", got)
	}
	w.apply()
	vip = w.output("vip")
	claim = filepath.Join(c.dir, "claims", vip)

	// The claim removed, the address left (a release that failed half
	// way): an update, and a destroy removes the address.
	if err := os.Remove(claim); err != nil {
		t.Fatal(err)
	}
	if got := actions(); got != "update" {
		t.Errorf("VIP actions with its claim removed = %q, want update", got)
	}
	w.ok("destroy", "-auto-approve", "-input=false", "-no-color")
	if configured() {
		t.Errorf("%s left configured on the host by the destroy", vip)
	}
	leftBehind(t, claim, "claim on "+vip)
}

// TestDriftedRoutedVIPIsDestroyed: a routed VIP whose config was edited
// or removed, or whose claim was removed, on the host is an in-place
// update in the next plan, which writes it again; a destroy removes what
// is left of it (dropped from state by the refresh, its claim or its
// config, which the router keeps routing, stayed on the host).
func TestDriftedRoutedVIPIsDestroyed(t *testing.T) {
	c := newCloud(t)
	w := newWorkspace(t, c, fmt.Sprintf(`
resource "lbhost_routed_vip" "r" {
  owner        = "c1_routed"
  pool         = %q
  nexthops     = [%q]
  health_check = { protocol = "TCP", port = 30080 }
}
output "vip" { value = lbhost_routed_vip.r.address }
`, c.pool, c.nodeA))
	w.apply()
	vip := w.output("vip")
	config := filepath.Join(c.dir, "routed", "c1_routed.json")
	claim := filepath.Join(c.dir, "claims", vip)
	applied, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	actions := func() string { return strings.Join(w.planActions()["lbhost_routed_vip.r"], ",") }

	// Edited by hand: written again.
	if err := os.WriteFile(config, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := actions(); got != "update" {
		t.Errorf("routed VIP actions with its config unreadable = %q, want update", got)
	}
	w.apply()
	if b, err := os.ReadFile(config); err != nil || string(b) != string(applied) {
		t.Errorf("config after the apply (%v):\n%s\nwant:\n%s", err, b, applied)
	}

	// The config removed, the claim left: a destroy removes the claim.
	if err := os.Remove(config); err != nil {
		t.Fatal(err)
	}
	if got := actions(); got != "update" {
		t.Errorf("routed VIP actions with its config removed = %q, want update", got)
	}
	w.apply()
	if got := w.output("vip"); got != vip {
		t.Errorf("routed VIP %s after its config was written again, want %s", got, vip)
	}
	if err := os.Remove(config); err != nil {
		t.Fatal(err)
	}
	w.ok("destroy", "-auto-approve", "-input=false", "-no-color")
	leftBehind(t, claim, "claim on "+vip)

	// The claim removed, the config left: a destroy removes the config.
	w.apply()
	vip = w.output("vip")
	if err := os.Remove(filepath.Join(c.dir, "claims", vip)); err != nil {
		t.Fatal(err)
	}
	if got := actions(); got != "update" {
		t.Errorf("routed VIP actions with its claim removed = %q, want update", got)
	}
	w.ok("destroy", "-auto-approve", "-input=false", "-no-color")
	leftBehind(t, config, "routed VIP config (the router keeps routing "+vip+")")
}
