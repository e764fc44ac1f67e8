package tfprovider_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostsProvider: a provider of every host (`hosts`) over ssh. A host
// that refuses connections is unreachable (lbhost_hosts names it; an
// allocation goes on with the others, warning that it was made without
// it); a wrong host key is a failure naming the host, never "down"; no
// host answering fails the plan; allocations of two owners get distinct
// addresses and VRRP ids, recorded on the host, and their destroy removes
// both records.
func TestHostsProvider(t *testing.T) {
	c := newCloud(t)
	sshBlock, _ := startSSHD(t, c, "")
	down := strings.Replace(sshBlock, "port             = 2222", "port             = 2223", 1)
	other := filepath.Join(t.TempDir(), "other")
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other)
	good := strings.Split(strings.Split(sshBlock, "host_key         = ")[1], "\n")[0]
	badKey := strings.Replace(sshBlock, good, fmt.Sprintf("%q", strings.TrimSpace(string(mustRead(t, other+".pub")))), 1)
	entry := func(name, ssh string) string {
		return fmt.Sprintf("{\n  name = %q\n  config_dir = %q\n  %s\n}", name, c.dir, ssh)
	}
	body := func(entries ...string) string {
		return fmt.Sprintf(`
provider "lbhost" {
  alias = "hosts"
  hosts = [%s]
}

data "lbhost_hosts" "all" {
  provider = lbhost.hosts
}

resource "lbhost_vip_allocation" "vip" {
  for_each                = toset(["c1_a", "c1_b"])
  provider                = lbhost.hosts
  owner                   = each.key
  pool                    = %q
  vrrp_interface          = "eth0"
  virtual_router_id_range = "10-20"
}

output "hosts" {
  value = "${join(",", data.lbhost_hosts.all.reachable)}/${join(",", data.lbhost_hosts.all.unreachable)}"
}

output "vips" {
  value = join(" ", [for o in ["c1_a", "c1_b"] : "${lbhost_vip_allocation.vip[o].address}:${lbhost_vip_allocation.vip[o].virtual_router_id}"])
}
`, strings.Join(entries, ", "), c.pool)
	}
	w := newWorkspace(t, c, body(entry("up", sshBlock), entry("down", down)))
	out := w.apply()
	if !strings.Contains(out, "allocated without down") {
		t.Errorf("apply with down refusing connections: no warning naming it:\n%s", out)
	}
	if got := w.output("hosts"); got != "up/down" {
		t.Errorf("reachable/unreachable %q, want up/down", got)
	}
	vips := strings.Fields(w.output("vips"))
	if len(vips) != 2 || strings.Split(vips[0], ":")[0] == strings.Split(vips[1], ":")[0] || strings.Split(vips[0], ":")[1] == strings.Split(vips[1], ":")[1] {
		t.Fatalf("allocations %v: want two distinct addresses and ids", vips)
	}
	for _, v := range vips {
		addr, id, _ := strings.Cut(v, ":")
		if claim := string(mustRead(t, filepath.Join(c.dir, "claims", addr))); !strings.HasPrefix(claim, "c1_") {
			t.Errorf("claim of %s: %q", addr, claim)
		}
		if _, err := os.Stat(filepath.Join(c.dir, "vrrp-ids", "eth0."+id)); err != nil {
			t.Errorf("reservation of id %s: %v", id, err)
		}
	}
	if acts := w.planActions(); strings.Join(acts[`lbhost_vip_allocation.vip["c1_a"]`], ",") != "no-op" {
		t.Errorf("second plan: %v, want no changes", acts)
	}

	w.write(c, body(entry("up", sshBlock), entry("badkey", badKey)))
	if out, code := w.cmd("plan", "-input=false", "-no-color"); code == 0 || !strings.Contains(out, "badkey") || !strings.Contains(out, "host key mismatch") {
		t.Errorf("plan with a wrong host key: exit %d, want a failure naming badkey's host key mismatch:\n%s", code, out)
	}
	w.write(c, body(entry("down", down)))
	if out, code := w.cmd("plan", "-input=false", "-no-color"); code == 0 || !strings.Contains(out, "no LB host is reachable") {
		t.Errorf("plan with no host answering: exit %d, want no LB host is reachable:\n%s", code, out)
	}

	w.write(c, body(entry("up", sshBlock), entry("down", down)))
	w.ok("destroy", "-auto-approve", "-input=false", "-no-color")
	for _, d := range []string{"claims", "vrrp-ids"} {
		if names, _ := os.ReadDir(filepath.Join(c.dir, d)); len(names) != 0 {
			t.Errorf("%s left after destroy: %v", d, names)
		}
	}
}
