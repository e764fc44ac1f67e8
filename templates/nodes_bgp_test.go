package templates

import (
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
)

// TestNodesBGPVariantPlan: a Service with tfccm.io/template: bgp gets the
// nodes set's bgp variant: its NodeVIPs are announced over BGP (the plan
// says announce = "bgp" and announcement "BGP").
func TestNodesBGPVariantPlan(t *testing.T) {
	tofuBin := repo.Tofu(t)
	cli := repo.LBHost(t)
	set, err := LoadBuiltin("nodes")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, `cluster_name = "prod-eu"
load_balancer {
  settings = { namespace = "tfccm-system" }
}`)
	s := svc(func(s *corev1.Service) { s.Annotations["tfccm.io/template"] = "bgp" })
	ws, err := set.RenderLoadBalancer(cfg, s, testNodes(), Addresses{IPs: []netip.Addr{netip.MustParseAddr("198.51.100.10")}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ws")
	if err := ws.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tf := testkit.Tofu{Binary: tofuBin, Dir: dir, CLIConfig: cli}
	if out, err := tf.Run(ctx, "init", "-input=false"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	out, err := tf.Command(ctx, "plan", "-input=false", "-no-color", "-refresh=false").CombinedOutput()
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	for _, want := range []string{`lbhost_node_vip.vip["IPv4"] will be created`, `announce                = "bgp"`, `announcement            = "BGP"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the plan lacks %q:\n%s", want, out)
		}
	}
}

// TestNodesBGPModulePlan plans the nodes set's bgp module (the peering,
// once per cluster): good settings plan one lbhost_node_bgp; a password
// given inline, a peer outside the nodes' networks and an invalid
// community are refused at plan naming the setting.
func TestNodesBGPModulePlan(t *testing.T) {
	plan := func(t *testing.T, peer, pool string) (string, error) {
		t.Helper()
		vars := `cluster_name = "prod-eu"
settings = {
  namespace = "tfccm-system"
  bgp = {
    asn = 64513
    node_networks = ["10.77.0.0/24"]
    peers = [{ name = "tor", asn = 64512, bfd_profile = "fast", ` + peer + ` }]
    bfd_profiles = [{ name = "fast", receive_interval_ms = 100, transmit_interval_ms = 100 }]
    pools = [{ name = "default", prefixes = ["198.51.100.0/24"], ` + pool + ` }]
  }
}
`
		// Not one of the set's per-Service modules: applied once per
		// cluster (as the baremetal set's bgp/), read from the repository.
		tf := clusterModule(t, "nodes/bgp", vars)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := tf.Command(ctx, "plan", "-input=false", "-no-color", "-refresh=false").CombinedOutput()
		return string(out), err
	}
	out, err := plan(t, `address = "10.77.0.1", password_secret = { name = "tfccm-bgp", key = "password" }`, `communities = ["64513:100"]`)
	if err != nil || !strings.Contains(out, "lbhost_node_bgp.nodes will be created") || !strings.Contains(out, `"tfccm-bgp"`) {
		t.Fatalf("good settings: %v\n%s", err, out)
	}
	for _, tc := range []struct{ name, peer, pool, want string }{
		{"inline password", `address = "10.77.0.1", password = "s3cret"`, `communities = []`, "a BGP password is never a setting"},
		{"peer outside the nodes' networks", `address = "10.99.0.1"`, `communities = []`, "peers[0].address"},
		{"invalid community", `address = "10.77.0.1"`, `communities = ["70000:1"]`, "pools[0].communities[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := plan(t, tc.peer, tc.pool)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Fatalf("plan: %v, want an error with %q:\n%s", err, tc.want, out)
			}
			if strings.Contains(out, "s3cret") {
				t.Fatalf("the password is in the output:\n%s", out)
			}
		})
	}
}
