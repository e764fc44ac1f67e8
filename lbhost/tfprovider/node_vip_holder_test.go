package tfprovider_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/nodelb/vipapi"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/l2seg"
)

// TestNodesHealthModuleReadsHolders plans the nodes set's health module
// (templates/nodes/loadbalancer/health) against a real kube-apiserver
// holding NodeVIP objects whose status the test writes as the node agents
// would: vip_holders names each family's holder (none before an agent
// reported, none while the Announced condition is False or describes an
// older spec; the contenders when the status lists two or more: a split
// brain), vip_idle the families whose reason is NoLocalEndpoint (left out
// of vip_holders), and backends marks the selected nodes the agents do not
// count eligible unhealthy; templates' decoders read them, as tfccm's
// health loop does.
func TestNodesHealthModuleReadsHolders(t *testing.T) {
	dyn, probeAll := healthModule(t, "loadbalancer")
	ctx := context.Background()
	probe := func(t *testing.T) (map[string][]string, []templates.BackendHealth, map[string]string) {
		holders, backends, idle, _ := probeAll(t)
		return holders, backends, idle
	}
	var contenders []string // the next report's status.contenders
	report := func(t *testing.T, name, addr, holder string, status metav1.ConditionStatus, reason string, candidates []string, stale bool) {
		t.Helper()
		u, err := dyn.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			v := &vipapi.NodeVIP{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l2seg.Namespace},
				Spec: vipapi.NodeVIPSpec{Address: addr, Service: vipapi.ServiceRef{Namespace: "shop", Name: "web"}, ExternalTrafficPolicy: "Cluster", Nodes: []string{"node-a", "node-b"}}}
			if u, err = vipapi.ToUnstructured(v); err != nil {
				t.Fatal(err)
			}
			if u, err = dyn.Create(ctx, u, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		v, err := vipapi.FromUnstructured(u)
		if err != nil {
			t.Fatal(err)
		}
		gen := v.Generation
		if stale {
			gen--
		}
		v.Status = vipapi.NodeVIPStatus{Holder: holder, Candidates: candidates, Contenders: contenders, ObservedGeneration: gen,
			Conditions: []metav1.Condition{{Type: vipapi.ConditionAnnounced, Status: status, Reason: reason, Message: "set by the test",
				ObservedGeneration: gen, LastTransitionTime: metav1.Now()}}}
		if u, err = vipapi.ToUnstructured(v); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	both := []string{"node-a", "node-b"}
	healthy := func(a, b bool) []templates.BackendHealth {
		return []templates.BackendHealth{{Node: "node-a", Healthy: a}, {Node: "node-b", Healthy: b}}
	}

	for _, step := range []struct {
		name     string
		act      func(t *testing.T)
		holders  map[string][]string
		backends []templates.BackendHealth
		idle     map[string]string
	}{
		{"no NodeVIP yet", func(*testing.T) {}, map[string][]string{"IPv4": {}, "IPv6": {}}, healthy(false, false), map[string]string{}},
		{"both held", func(t *testing.T) {
			report(t, "prod-abc-4", "192.0.2.10", "node-a", metav1.ConditionTrue, vipapi.ReasonAnnounced, both, false)
			report(t, "prod-abc-6", "2001:db8::10", "node-b", metav1.ConditionTrue, vipapi.ReasonAnnounced, both, false)
		}, map[string][]string{"IPv4": {"node-a"}, "IPv6": {"node-b"}}, healthy(true, true), map[string]string{}},
		{"split brain on IPv4: both contenders", func(t *testing.T) {
			contenders = both
			report(t, "prod-abc-4", "192.0.2.10", "node-b", metav1.ConditionTrue, vipapi.ReasonAnnounced, both, false)
			contenders = nil
		}, map[string][]string{"IPv4": {"node-a", "node-b"}, "IPv6": {"node-b"}}, healthy(true, true), map[string]string{}},
		{"IPv6 cannot be announced, node-a no longer eligible", func(t *testing.T) {
			report(t, "prod-abc-4", "192.0.2.10", "node-b", metav1.ConditionTrue, vipapi.ReasonAnnounced, []string{"node-b"}, false)
			report(t, "prod-abc-6", "2001:db8::10", "node-b", metav1.ConditionFalse, vipapi.ReasonCannotAnnounce, []string{"node-b"}, false)
		}, map[string][]string{"IPv4": {"node-b"}, "IPv6": {}}, healthy(false, true), map[string]string{}},
		{"a status of an older spec", func(t *testing.T) {
			report(t, "prod-abc-6", "2001:db8::10", "node-a", metav1.ConditionTrue, vipapi.ReasonAnnounced, both, true)
		}, map[string][]string{"IPv4": {"node-b"}, "IPv6": {}}, healthy(false, true), map[string]string{}},
		{"IPv6 with no ready local endpoint: idle, not held", func(t *testing.T) {
			report(t, "prod-abc-6", "2001:db8::10", "", metav1.ConditionFalse, vipapi.ReasonNoLocalEndpoint, nil, false)
		}, map[string][]string{"IPv4": {"node-b"}}, healthy(false, false), map[string]string{"IPv6": vipapi.ReasonNoLocalEndpoint}},
	} {
		step.act(t)
		holders, backends, idle := probe(t)
		if !reflect.DeepEqual(idle, step.idle) {
			t.Errorf("%s: vip_idle %v, want %v", step.name, idle, step.idle)
		}
		if !reflect.DeepEqual(holders, step.holders) {
			t.Errorf("%s: vip_holders %v, want %v", step.name, holders, step.holders)
		}
		if !reflect.DeepEqual(backends, step.backends) {
			t.Errorf("%s: backends %v, want %v", step.name, backends, step.backends)
		}
	}
}

// healthModule starts a control plane with the NodeVIP CRD and inits the
// nodes set's health module of variant (templates/nodes/<variant>/health)
// for a load balancer of both families over node-a and node-b (node-c not
// selected); the function returned plans it and decodes its outputs as
// tfccm's health loop does.
func healthModule(t *testing.T, variant string) (dynamic.ResourceInterface, func(t *testing.T) (map[string][]string, []templates.BackendHealth, map[string]string, string)) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	cluster := devcluster.ForTest(t)
	l2seg.InstallNodeVIPCRD(t, cluster.RESTConfig())
	ctx := context.Background()
	if _, err := cluster.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l2seg.Namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cluster.RESTConfig()).Resource(vipapi.GVR).Namespace(l2seg.Namespace)

	// The workspace: the health module beside the inputs tfccm writes.
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	dir := filepath.Join(ws, templates.HealthDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "templates", "nodes", variant, templates.HealthDir, "main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	inputs, _ := json.Marshal(map[string]any{
		"load_balancer_id": "prod-abc",
		"service":          map[string]any{"load_balancer_ips": []string{"192.0.2.10", "2001:db8::10"}},
		"nodes": []map[string]any{
			{"name": "node-a", "labels": map[string]string{"lb": "yes"}},
			{"name": "node-b", "labels": map[string]string{"lb": "yes"}},
			{"name": "node-c", "labels": map[string]string{}},
		},
		"settings": map[string]any{"namespace": l2seg.Namespace, "node_selector": map[string]string{"lb": "yes"}},
	})
	for name, data := range map[string][]byte{filepath.Join(dir, "main.tf"): src, filepath.Join(dir, "tfccm.auto.tfvars.json"): inputs} {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tofu := testkit.Tofu{Binary: repo.Tofu(t), Dir: dir, CLIConfig: cliConfig, Env: []string{"KUBECONFIG=" + cluster.Kubeconfig()}}
	if out, err := tofu.Run(ctx, "init", "-input=false", "-no-color"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	return dyn, func(t *testing.T) (map[string][]string, []templates.BackendHealth, map[string]string, string) {
		t.Helper()
		if out, err := tofu.Run(ctx, "plan", "-input=false", "-no-color", "-lock=false", "-out=probe.plan"); err != nil {
			t.Fatalf("plan: %v\n%s", err, out)
		}
		out, err := tofu.Run(ctx, "show", "-json", "probe.plan")
		if err != nil {
			t.Fatalf("show: %v\n%s", err, out)
		}
		var plan struct {
			PlannedValues struct {
				Outputs map[string]struct {
					Value json.RawMessage `json:"value"`
				} `json:"outputs"`
			} `json:"planned_values"`
		}
		if err := json.Unmarshal(out, &plan); err != nil {
			t.Fatal(err)
		}
		outs := map[string]json.RawMessage{}
		for k, v := range plan.PlannedValues.Outputs {
			outs[k] = v.Value
		}
		holders, err := templates.DecodeVIPHolders(outs)
		if err != nil {
			t.Fatal(err)
		}
		backends, err := templates.DecodeBackends(outs)
		if err != nil {
			t.Fatal(err)
		}
		idle, err := templates.DecodeVIPIdle(outs)
		if err != nil {
			t.Fatal(err)
		}
		kind, err := templates.DecodeVIPHolderKind(outs)
		if err != nil {
			t.Fatal(err)
		}
		return holders, backends, idle, kind
	}
}

// TestNodesBGPHealthModuleReadsAnnouncers plans the bgp variant's health
// module (templates/nodes/loadbalancer.bgp/health) against NodeVIP
// objects whose status the test writes as the agents would: vip_holders
// names each family's announcers (every node announcing it over BGP: none
// before an agent reported, while Announced is False or describes an
// older spec), vip_idle the NoLocalEndpoint families, and vip_holder_kind
// is "BGP node" (VIPHeld active-active).
func TestNodesBGPHealthModuleReadsAnnouncers(t *testing.T) {
	dyn, probe := healthModule(t, "loadbalancer.bgp")
	ctx := context.Background()
	report := func(t *testing.T, name, addr string, announcers []string, status metav1.ConditionStatus, reason string, stale bool) {
		t.Helper()
		u, err := dyn.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			v := &vipapi.NodeVIP{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l2seg.Namespace},
				Spec: vipapi.NodeVIPSpec{Address: addr, Service: vipapi.ServiceRef{Namespace: "shop", Name: "web"}, ExternalTrafficPolicy: "Cluster",
					Nodes: []string{"node-a", "node-b"}, Announce: vipapi.AnnounceBGP}}
			if u, err = vipapi.ToUnstructured(v); err != nil {
				t.Fatal(err)
			}
			if u, err = dyn.Create(ctx, u, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		v, err := vipapi.FromUnstructured(u)
		if err != nil {
			t.Fatal(err)
		}
		gen := v.Generation
		if stale {
			gen--
		}
		v.Status = vipapi.NodeVIPStatus{Announcers: announcers, Candidates: []string{"node-a", "node-b"}, ObservedGeneration: gen,
			Conditions: []metav1.Condition{{Type: vipapi.ConditionAnnounced, Status: status, Reason: reason, Message: "set by the test",
				ObservedGeneration: gen, LastTransitionTime: metav1.Now()}}}
		if u, err = vipapi.ToUnstructured(v); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		name    string
		act     func(t *testing.T)
		holders map[string][]string
		idle    map[string]string
	}{
		{"no NodeVIP yet", func(*testing.T) {}, map[string][]string{"IPv4": {}, "IPv6": {}}, map[string]string{}},
		{"announced by both nodes, IPv6 by one", func(t *testing.T) {
			report(t, "prod-abc-4", "192.0.2.10", []string{"node-b", "node-a"}, metav1.ConditionTrue, vipapi.ReasonAnnounced, false)
			report(t, "prod-abc-6", "2001:db8::10", []string{"node-b"}, metav1.ConditionTrue, vipapi.ReasonAnnounced, false)
		}, map[string][]string{"IPv4": {"node-a", "node-b"}, "IPv6": {"node-b"}}, map[string]string{}},
		{"IPv6 announced by no node's FRR", func(t *testing.T) {
			report(t, "prod-abc-6", "2001:db8::10", nil, metav1.ConditionFalse, vipapi.ReasonNoBGP, false)
		}, map[string][]string{"IPv4": {"node-a", "node-b"}, "IPv6": {}}, map[string]string{}},
		{"a status of an older spec", func(t *testing.T) {
			report(t, "prod-abc-4", "192.0.2.10", []string{"node-a", "node-b"}, metav1.ConditionTrue, vipapi.ReasonAnnounced, true)
		}, map[string][]string{"IPv4": {}, "IPv6": {}}, map[string]string{}},
		{"IPv6 with no ready local endpoint: idle", func(t *testing.T) {
			report(t, "prod-abc-6", "2001:db8::10", nil, metav1.ConditionFalse, vipapi.ReasonNoLocalEndpoint, false)
		}, map[string][]string{"IPv4": {}}, map[string]string{"IPv6": vipapi.ReasonNoLocalEndpoint}},
	} {
		step.act(t)
		holders, _, idle, kind := probe(t)
		if kind != "BGP node" {
			t.Errorf("%s: vip_holder_kind %q, want BGP node", step.name, kind)
		}
		if !reflect.DeepEqual(idle, step.idle) {
			t.Errorf("%s: vip_idle %v, want %v", step.name, idle, step.idle)
		}
		if !reflect.DeepEqual(holders, step.holders) {
			t.Errorf("%s: vip_holders %v, want %v", step.name, holders, step.holders)
		}
	}
}
