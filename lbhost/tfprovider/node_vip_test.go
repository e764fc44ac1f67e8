package tfprovider_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/nodelb/vipapi"
	"github.com/tfccm/tfccm/test/l2seg"
)

// nodeVIPConfig is a workspace of lbhost_node_vip resources in namespace
// tfccm-system of the cluster of kubeconfig.
func nodeVIPConfig(kubeconfig, body string) string {
	return fmt.Sprintf(`terraform {
  required_providers {
    lbhost = { source = "tfccm/lbhost" }
  }
}

provider "lbhost" {
  kubernetes = {
    namespace   = "tfccm-system"
    config_path = %q
  }
}
`, kubeconfig) + body
}

func nodeVIP(name, addr, nodes, extra string) string {
	return fmt.Sprintf(`
resource "lbhost_node_vip" %q {
  name                    = %q
  address                 = %q
  service                 = { namespace = "shop", name = %q }
  ports                   = [{ protocol = "TCP", port = 80 }, { protocol = "UDP", port = 53 }]
  external_traffic_policy = "Cluster"
  nodes                   = %s
  %s
}
`, name, name, addr, name, nodes, extra)
}

// TestNodeVIPProviderAgainstAPIServer: lbhost_node_vip against a real
// kube-apiserver and two real node agents on an L2 segment of namespaces.
// The plan shows each VIP's ports, nodes and announcement; apply returns
// once an agent announced it (IPv4 and IPv6), the holder answers for it;
// an address outside the nodes' networks, a VIP no node may hold and one
// only a node whose agent lacks CAP_NET_RAW may hold fail the apply naming
// the reason, with a Warning Event, and nothing answers;
// the CRD refuses an address not in canonical form; destroy leaves nothing
// answering.
func TestNodeVIPProviderAgainstAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	net := fmt.Sprintf("10.97.%d", os.Getpid()%250)
	seg := l2seg.New(t, l2seg.Options{Prefix: fmt.Sprintf("nv%d", os.Getpid()%100000), Net: net, Nodes: []string{"a", "b", "c"}, Host: true, NoNetRaw: []string{"c"}})
	vip4, vip6 := seg.Addr(100), seg.Addr6(100)
	seg.AddVIPs(t, vip4, vip6)
	nm := seg.StartNodeMode(t)
	cluster, client, ctx := nm.Cluster, nm.Cluster.Client(), context.Background()

	dir := t.TempDir()
	tofu := testkit.Tofu{Binary: repo.Tofu(t), Dir: dir, CLIConfig: cliConfig}
	write := func(body string) {
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(nodeVIPConfig(cluster.Kubeconfig(), body)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		out, err := tofu.Command(cctx, args...).CombinedOutput()
		return string(out), err
	}
	good := nodeVIP("web-4", vip4, `["a", "b"]`, "") + nodeVIP("web-6", vip6, `["a", "b"]`, "")
	write(good)
	if out, err := run("init", "-input=false", "-no-color"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	plan, err := run("plan", "-input=false", "-no-color")
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, plan)
	}
	for _, want := range []string{`announcement            = "gratuitous ARP"`, `announcement            = "unsolicited neighbor advertisement"`,
		`+ nodes                   = [`, `+ "a",`, `+ protocol = "UDP"`, `+ port     = 53`, `holder                  = (known after apply)`} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan lacks %q:\n%s", want, plan)
		}
	}
	start := time.Now()
	if out, err := run("apply", "-input=false", "-no-color", "-auto-approve"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	t.Logf("apply returned announced in %v", time.Since(start).Round(time.Millisecond))
	dyn := dynamic.NewForConfigOrDie(cluster.RESTConfig()).Resource(vipapi.GVR).Namespace("tfccm-system")
	for name, vip := range map[string]string{"web-4": vip4, "web-6": vip6} {
		u, err := dyn.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, err := vipapi.FromUnstructured(u)
		if err != nil {
			t.Fatal(err)
		}
		if c := v.Status.Announced(); c == nil || c.Status != metav1.ConditionTrue || v.Status.Holder == "" {
			t.Fatalf("%s after apply: %+v", name, v.Status)
		}
		if got, err := seg.Ask(vip, time.Second); got != v.Status.Holder {
			t.Errorf("%s (%s) held by %s: answered by %q (%v)", name, vip, v.Status.Holder, got, err)
		}
		out, _ := run("state", "show", "-no-color", "lbhost_node_vip."+name)
		if !strings.Contains(out, fmt.Sprintf("holder                  = %q", v.Status.Holder)) {
			t.Errorf("state of %s lacks its holder %s:\n%s", name, v.Status.Holder, out)
		}
	}

	// Bad input: a failed apply naming the reason, a Warning Event, nothing answering.
	outside := "192.0.2.77"
	for _, tc := range []struct {
		name, addr, nodes, reason string
	}{
		{"outside", outside, `["a", "b"]`, vipapi.ReasonOutsideNetworks},
		{"nobody", seg.Addr(101), `[]`, vipapi.ReasonNoEligibleNode},
		{"nocap", seg.Addr(102), `["c"]`, "the agent lacks capability NET_RAW"},
	} {
		write(good + nodeVIP(tc.name, tc.addr, tc.nodes, `wait_timeout = "5s"`))
		out, err := run("apply", "-input=false", "-no-color", "-auto-approve")
		if err == nil || !strings.Contains(out, tc.reason) {
			t.Errorf("%s: apply: %v, want a failure naming %s:\n%s", tc.name, err, tc.reason, out)
		}
		evs, err := client.CoreV1().Events("tfccm-system").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + tc.name})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range evs.Items {
			found = found || e.Type == corev1.EventTypeWarning && (e.Reason == tc.reason || strings.Contains(e.Message, tc.reason))
		}
		if !found {
			t.Errorf("%s: no Warning Event %s on the NodeVIP: %+v", tc.name, tc.reason, evs.Items)
		}
	}
	if got, err := seg.Ask(seg.Addr(101), 300*time.Millisecond); err == nil {
		t.Errorf("a VIP no node may hold answered, by %q", got)
	}

	// externalTrafficPolicy Local and no ready endpoint anywhere: apply
	// returns at once (no wait for an announcement), the status says
	// NoLocalEndpoint with no holder, no Warning, nothing answers.
	idle := strings.Replace(nodeVIP("idle", seg.Addr(103), `["a", "b"]`, `wait_timeout = "30s"`), `"Cluster"`, `"Local"`, 1)
	write(good + idle)
	start = time.Now()
	if out, err := run("apply", "-input=false", "-no-color", "-auto-approve"); err != nil {
		t.Errorf("apply of a Local VIP without endpoints: %v\n%s", err, out)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("apply of a Local VIP without endpoints took %v: it waited for an announcement", took)
	}
	if u, err := dyn.Get(ctx, "idle", metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if v, err := vipapi.FromUnstructured(u); err != nil || v.Status.Holder != "" || v.Status.Announced() == nil || v.Status.Announced().Reason != vipapi.ReasonNoLocalEndpoint {
		t.Errorf("the Local VIP without endpoints: %v %+v, want reason %s and no holder", err, v.Status, vipapi.ReasonNoLocalEndpoint)
	}
	if evs, err := client.CoreV1().Events("tfccm-system").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=idle,type=Warning"}); err != nil || len(evs.Items) > 0 {
		t.Errorf("Warning Events on the Local VIP without endpoints: %v %+v", err, evs)
	}
	if got, err := seg.Ask(seg.Addr(103), 300*time.Millisecond); err == nil {
		t.Errorf("a Local VIP without endpoints answered, by %q", got)
	}

	// The CRD refuses an address in another form than the canonical one
	// (two objects could otherwise name one VIP differently).
	junk, err := vipapi.ToUnstructured(&vipapi.NodeVIP{ObjectMeta: metav1.ObjectMeta{Name: "junk", Namespace: "tfccm-system"},
		Spec: vipapi.NodeVIPSpec{Address: "fd00:0::1", Service: vipapi.ServiceRef{Namespace: "shop", Name: "junk"}, ExternalTrafficPolicy: "Cluster"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Create(ctx, junk, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "canonical form") {
		t.Errorf("a non-canonical address: %v", err)
	}

	// Destroy: nothing answers any more.
	write("")
	if out, err := run("apply", "-input=false", "-no-color", "-auto-approve"); err != nil {
		t.Fatalf("destroy: %v\n%s", err, out)
	}
	l2seg.Sh(t, "ip", "-n", seg.Netns(l2seg.Client), "neigh", "flush", "dev", "eth0")
	for _, vip := range []string{vip4, vip6} {
		if got, err := seg.Ask(vip, 500*time.Millisecond); err == nil {
			t.Errorf("%s answered by %q after destroy", vip, got)
		}
	}
}
