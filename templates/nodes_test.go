package templates

import (
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
)

// TestNodesSetPlan renders the built-in nodes set (node mode) for a Service
// and plans it with the real OpenTofu and tfccm's lbhost provider (a plan
// of new NodeVIPs reads nothing from the cluster): the plan shows each
// family's VIP with its ports, the nodes settings.node_selector picks and
// its announcement; a selector that matches no node, and a Service tfccm
// allocated no address for, fail the plan naming the problem. Prepared
// (Standby: a migration from MetalLB), its NodeVIPs are on standby.
func TestNodesSetPlan(t *testing.T) {
	tofuBin := repo.Tofu(t)
	cli := repo.LBHost(t)
	set, err := LoadBuiltin("nodes")
	if err != nil {
		t.Fatal(err)
	}
	plan := func(t *testing.T, selector string, standby bool, ips ...string) (string, error) {
		t.Helper()
		cfg := testConfig(t, `cluster_name = "prod-eu"
load_balancer {
  settings = { namespace = "tfccm-system", node_selector = `+selector+` }
}`)
		addrs := Addresses{Standby: standby}
		for _, ip := range ips {
			addrs.IPs = append(addrs.IPs, netip.MustParseAddr(ip))
		}
		ws, err := set.RenderLoadBalancer(cfg, svc(nil), testNodes(), addrs)
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
		return string(out), err
	}
	out, err := plan(t, `{ "topology.kubernetes.io/zone" = "zone-a" }`, false, "192.168.1.240")
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	for _, want := range []string{`lbhost_node_vip.vip["IPv4"] will be created`, `address                 = "192.168.1.240"`,
		`announcement            = "gratuitous ARP"`, `+ "node-a",`, `+ port     = 9090`, `external_traffic_policy = "Cluster"`, `standby                 = false`} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"node-b"`) {
		t.Errorf("the plan lets node-b (zone-b) hold the VIP:\n%s", out)
	}
	if out, err := plan(t, `{}`, true, "192.168.1.240"); err != nil || !strings.Contains(out, `standby                 = true`) {
		t.Errorf("prepared: the NodeVIP not on standby: %v\n%s", err, out)
	}
	if out, err := plan(t, `{ "topology.kubernetes.io/zone" = "zone-z" }`, false, "192.168.1.240"); err == nil || !strings.Contains(out, "matches none of the 3 nodes") {
		t.Errorf("a selector matching no node: %v\n%s", err, out)
	}
	if out, err := plan(t, `{}`, false); err == nil || !strings.Contains(out, "none was allocated") {
		t.Errorf("no address allocated: %v\n%s", err, out)
	}
}
