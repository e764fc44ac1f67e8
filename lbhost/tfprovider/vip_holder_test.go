package tfprovider_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVIPHolderDataSource: lbhost_vip_holder reads, from another root
// module and without a lock, whether the host holds a VRRP VIP: held once
// keepalived is master; an address deleted by hand is put back by
// keepalived itself (its netlink reflector sees the VIP removed, it
// gives the VIP up with a priority-0 advert and, alone, takes it again),
// read held again; with keepalived stopped the VIP is not held, its
// address still named; an owner without an instance reads no address.
func TestVIPHolderDataSource(t *testing.T) {
	c := newCloud(t)
	config, pidFile := startKeepalived(t, c)
	w := newWorkspace(t, c, fmt.Sprintf(`
resource "lbhost_vip" "v" {
  owner     = "c1_held"
  pool      = %q
  interface = %q
  vrrp = {
    interface         = %q
    virtual_router_id = 43
    priority          = 100
  }
}
output "vip" { value = lbhost_vip.v.address }
`, c.pool, c.link, c.link))
	b := mustRead(t, filepath.Join(w.dir, "main.tf"))
	b = []byte(strings.Replace(string(b), "  config_dir = ", fmt.Sprintf("  keepalived_config   = %q\n  keepalived_pid_file = %q\n  config_dir = ", config, pidFile), 1))
	if err := os.WriteFile(filepath.Join(w.dir, "main.tf"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	w.apply()
	vip := w.output("vip")

	reader := newWorkspace(t, c, `
data "lbhost_vip_holder" "v" {
  owner = "c1_held"
}
data "lbhost_vip_holder" "none" {
  owner = "c1_nothing"
}
output "held" {
  value = jsonencode([data.lbhost_vip_holder.v, data.lbhost_vip_holder.none])
}
`)
	read := func() string {
		reader.ok("apply", "-refresh-only", "-auto-approve", "-input=false", "-no-color", "-lock=false")
		return reader.output("held")
	}
	entry := func(owner, addr string, held bool) string {
		return fmt.Sprintf(`{"address":%q,"held":%t,"owner":%q,"reachable":true,"share":null}`, addr, held, owner)
	}
	want := func(what string, held bool, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		exp := "[" + entry("c1_held", vip, held) + "," + entry("c1_nothing", "", false) + "]"
		for {
			got := read()
			if got == exp {
				return time.Since(start)
			}
			if time.Since(start) > within {
				t.Fatalf("%s: read %s, want %s", what, got, exp)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	want("keepalived master", true, 15*time.Second)

	run(t, "ip", "-n", c.netns, "addr", "del", vip+"/32", "dev", c.link)
	t.Logf("VIP deleted by hand: held again after %s", want("VIP deleted by hand", true, 10*time.Second))

	killPIDFile(pidFile)
	want("keepalived stopped", false, 10*time.Second)
}
