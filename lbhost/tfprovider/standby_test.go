package tfprovider_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// standbyLB is a VIP at address on standby (or not) with a frontend on it.
func standbyLB(c *cloud, address string, standby bool) string {
	return fmt.Sprintf(`
resource "lbhost_vip" "vip" {
  owner   = "c1_web"
  pool    = %[1]q
  address = %[2]q
  standby = %[3]t
}

resource "lbhost_frontend" "lb" {
  name     = "c1_web"
  address  = lbhost_vip.vip.address
  ports    = [{ port = 80, node_port = 30090 }]
  backends = [{ name = "node-a", address = %[4]q }]
  health_check = { protocol = "TCP", interval = "200ms", rise = 1, fall = 1 }
}
`, c.pool, address, standby, c.nodeA)
}

// TestVIPStandby: a VIP on standby is claimed and its frontend listens
// (ip_nonlocal_bind), but the address is not on the host; standby = false
// announces it with an in-place update of the VIP alone, and true withdraws
// it again, keeping the claim.
func TestVIPStandby(t *testing.T) {
	c := newCloud(t)
	run(t, "ip", "netns", "exec", c.netns, "sysctl", "-qw", "net.ipv4.ip_nonlocal_bind=1")
	serve(t, c.nodeA+":30090", "web")
	vip := strings.TrimSuffix(c.pool, "0/24") + "77"
	onHost := func() bool {
		return strings.Contains(run(t, "ip", "-n", c.netns, "-4", "addr", "show", "dev", "lo"), " "+vip+"/32")
	}
	w := newWorkspace(t, c, standbyLB(c, vip, true))
	w.apply()
	if onHost() {
		t.Fatalf("%s configured on standby", vip)
	}
	if b := string(mustRead(t, filepath.Join(c.dir, "claims", vip))); b != "c1_web\n" {
		t.Fatalf("claim on standby = %q, want c1_web's", b)
	}
	if out, code := w.cmd("plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
		t.Fatalf("plan after the standby apply: exit %d, want no changes\n%s", code, out)
	}

	w.write(c, standbyLB(c, vip, false))
	changes := map[string]string{}
	for addr, actions := range w.planActions() {
		if a := strings.Join(actions, ","); a != "no-op" {
			changes[addr] = a
		}
	}
	if len(changes) != 1 || changes["lbhost_vip.vip"] != "update" {
		t.Fatalf("announcing plans %v, want one in-place update of lbhost_vip.vip", changes)
	}
	w.apply()
	if !onHost() {
		t.Fatalf("%s not configured once announced", vip)
	}
	waitFor(t, "http://"+vip+"/", "web")

	w.write(c, standbyLB(c, vip, true))
	w.apply()
	if onHost() {
		t.Fatalf("%s still configured after going back to standby", vip)
	}
	if b := string(mustRead(t, filepath.Join(c.dir, "claims", vip))); b != "c1_web\n" {
		t.Fatalf("claim after the withdrawal = %q, want c1_web's kept", b)
	}
	w.ok("destroy", "-auto-approve", "-input=false", "-no-color")
}
