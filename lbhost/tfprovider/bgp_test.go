package tfprovider_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBGPSpeakerBadInputAtPlan: lbhost_bgp_speaker refuses bad peering at
// plan, naming the argument (the host's networks read over the
// transport), and a good one plans with a configuration hash, its
// password read from a file and found nowhere in the plan.
func TestBGPSpeakerBadInputAtPlan(t *testing.T) {
	c := newCloud(t)
	pwFile := filepath.Join(t.TempDir(), "password")
	const password = "plan-never-sees-me"
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	speaker := func(asn, peer, peerASN, extra, community string) string {
		return fmt.Sprintf(`
resource "lbhost_bgp_speaker" "s" {
  asn       = %s
  router_id = %q
  peers = [{ name = "tor", address = %q, asn = %s, bfd_profile = "fast", password_file = %q%s }]
  bfd_profiles = [{ name = "fast", receive_interval_ms = 100, transmit_interval_ms = 100 }]
  pools = [{ name = "web", prefixes = [%q], communities = [%q], local_preference = 200 }]
}
`, asn, c.gateway, peer, peerASN, pwFile, extra, c.pool, community)
	}
	for _, tc := range []struct {
		name, body string
		want       []string // in tofu's output; none: the plan succeeds
	}{
		{"good", speaker("64513", c.nodeA, "64512", "", "64513:100"), nil},
		{"reserved asn", speaker("23456", c.nodeA, "64512", "", "64513:100"), []string{"asn: AS 23456 is AS_TRANS"}},
		{"private asn clash", speaker("64513", c.nodeA, "64513", "", "64513:100"), []string{"peers[0].asn: AS 64513 is the host's own asn"}},
		{"peer off every network", speaker("64513", "192.0.2.1", "64512", "", "64513:100"), []string{"peers[0].address: 192.0.2.1 is outside every network of the host's interfaces"}},
		{"invalid community", speaker("64513", c.nodeA, "64512", "", "64513:70000"), []string{"pools[0].communities[0]", "0-65535"}},
		{"inline password", speaker("64513", c.nodeA, "64512", `, password = "inline"`, "64513:100"), []string{"peers[0].password: a BGP password is never an argument"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkspace(t, c, tc.body)
			out, code := w.cmd("plan", "-input=false", "-no-color")
			if strings.Contains(out, password) {
				t.Fatalf("the password is in tofu's output:\n%s", out)
			}
			if tc.want == nil {
				if code != 0 || !strings.Contains(out, "config_hash") {
					t.Fatalf("plan: exit %d\n%s", code, out)
				}
				return
			}
			if code == 0 {
				t.Fatalf("plan succeeded, want it refused naming %v:\n%s", tc.want, out)
			}
			flat := strings.Join(strings.Fields(out), " ")
			for _, s := range tc.want {
				if !strings.Contains(flat, s) {
					t.Errorf("plan output lacks %q:\n%s", s, out)
				}
			}
		})
	}
}

// TestBGPRouterBadInputAtPlan: lbhost_bgp_router refuses bad router-side
// peering at plan naming the argument (the router's networks, its
// `router bgp` and the password file read over the transport), and a
// good one plans with a hash, the password found nowhere in the plan.
func TestBGPRouterBadInputAtPlan(t *testing.T) {
	c := newCloud(t)
	dir := t.TempDir()
	frrConf, pwFile := filepath.Join(dir, "frr.conf"), filepath.Join(dir, "password")
	const password = "router-plan-never-sees-me"
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(frrConf, []byte("frr defaults datacenter\n!\nrouter bgp 64512\n bgp router-id 10.0.0.1\nexit\n!\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	router := func(asn, neighbor, neighborASN, extra string) string {
		return fmt.Sprintf(`
provider "lbhost" {
  alias      = "router"
  netns      = %q
  frr_config = %q
}

resource "lbhost_bgp_router" "r" {
  provider  = lbhost.router
  asn       = %s
  neighbors = [{ name = "lb-a", address = %q, asn = %s, bfd_profile = "fast", password_file = %q%s }]
  bfd_profiles = [{ name = "fast", receive_interval_ms = 100, transmit_interval_ms = 100 }]
  prefixes  = [%q]
}
`, c.netns, frrConf, asn, neighbor, neighborASN, pwFile, extra, c.pool)
	}
	for _, tc := range []struct {
		name, body string
		want       []string // in tofu's output; none: the plan succeeds
	}{
		{"good", router("64512", c.nodeA, "64513", ""), nil},
		{"not the router's AS", router("64600", c.nodeA, "64513", ""), []string{"asn: the router's configuration has no `router bgp 64600`"}},
		{"private asn clash", router("64512", c.nodeA, "64512", ""), []string{"neighbors[0].asn: AS 64512 is the host's own asn"}},
		{"neighbour off every network", router("64512", "192.0.2.1", "64513", ""), []string{"neighbors[0].address: 192.0.2.1 is outside every network"}},
		{"inline password", router("64512", c.nodeA, "64513", `, password = "inline"`), []string{"neighbors[0].password: a BGP password is never an argument"}},
		{"no password file on the router", strings.Replace(router("64512", c.nodeA, "64513", ""), pwFile, pwFile+".gone", 1), []string{"neighbors[0].password_file: cannot read " + pwFile + ".gone on the router"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkspace(t, c, tc.body)
			out, code := w.cmd("plan", "-input=false", "-no-color")
			if strings.Contains(out, password) {
				t.Fatalf("the password is in tofu's output:\n%s", out)
			}
			if tc.want == nil {
				if code != 0 || !strings.Contains(out, "config_hash") {
					t.Fatalf("plan: exit %d\n%s", code, out)
				}
				return
			}
			if code == 0 {
				t.Fatalf("plan succeeded, want it refused naming %v:\n%s", tc.want, out)
			}
			flat := strings.Join(strings.Fields(out), " ")
			for _, s := range tc.want {
				if !strings.Contains(flat, s) {
					t.Errorf("plan output lacks %q:\n%s", s, out)
				}
			}
		})
	}
}
