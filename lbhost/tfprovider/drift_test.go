package tfprovider_test

import (
	"context"
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
	if _, err := os.Stat(fragment); !os.IsNotExist(err) {
		t.Errorf("fragment left on the host by the destroy (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "claims", vip)); !os.IsNotExist(err) {
		t.Errorf("claim on %s left by the destroy (%v)", vip, err)
	}
}
