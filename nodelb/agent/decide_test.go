package agent

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/nodelb/holder"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

func testNode(name string, ready, cordoned bool) *corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Unschedulable: cordoned},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}},
	}
}

func testVIP(name, addr, policy string, nodes ...string) *vipapi.NodeVIP {
	return &vipapi.NodeVIP{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tfccm"},
		Spec: vipapi.NodeVIPSpec{Address: addr, Service: vipapi.ServiceRef{Namespace: "app", Name: name},
			ExternalTrafficPolicy: policy, Nodes: nodes},
	}
}

// TestDecide: the decision for each address, from a view of three nodes.
func TestDecide(t *testing.T) {
	yes := true
	onB := "b"
	w := view{
		nodes: map[string]*corev1.Node{"a": testNode("a", true, false), "b": testNode("b", true, false), "c": testNode("c", true, true), "d": testNode("d", false, false)},
		members: map[string]member{
			"a": {Name: "a", meta: meta{Eligible: true}}, "b": {Name: "b", meta: meta{Eligible: true}},
			"c": {Name: "c", meta: meta{Eligible: true}}, "d": {Name: "d", meta: meta{Eligible: true}},
			"e": {Name: "e", meta: meta{Why: "the agent lacks capability NET_RAW"}},
		},
		slices: func(ns, name string) []*discoveryv1.EndpointSlice {
			if name != "local" && name != "local2" {
				return nil
			}
			return []*discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{{NodeName: &onB, Conditions: discoveryv1.EndpointConditions{Ready: &yes}}}}}
		},
	}
	w.nodes["e"] = testNode("e", true, false)
	for _, tc := range []struct {
		name       string
		vips       []*vipapi.NodeVIP
		candidates []string
		why        string
		reason     string
		invalid    bool
		standby    bool // no holder: every NodeVIP of the address on standby
	}{
		{"cluster policy: ready, schedulable nodes with a live agent", []*vipapi.NodeVIP{testVIP("web", "10.0.0.1", "Cluster", "a", "b", "c", "d")}, []string{"a", "b"}, "", "", false, false},
		{"local policy: only the node with an endpoint", []*vipapi.NodeVIP{testVIP("local", "10.0.0.2", "Local", "a", "b")}, []string{"b"}, "", "", false, false},
		{"shared address: the nodes every Service allows", []*vipapi.NodeVIP{testVIP("web", "10.0.0.3", "Cluster", "a", "b"), testVIP("local2", "10.0.0.3", "Local", "a", "b")}, []string{"b"}, "", "", false, false},
		{"no node selected", []*vipapi.NodeVIP{testVIP("web", "10.0.0.4", "Cluster")}, nil, "no node may hold it: the node selector matches no node", vipapi.ReasonNoEligibleNode, false, false},
		{"every node out", []*vipapi.NodeVIP{testVIP("web", "10.0.0.5", "Cluster", "c", "d", "e", "gone")}, nil,
			"no eligible node: c: " + holder.NotSchedulable + "; d: " + holder.NotReady + "; e: " + holder.AgentIneligible + " (the agent lacks capability NET_RAW); gone: no such Node", vipapi.ReasonNoEligibleNode, false, false},
		{"local policy, no ready endpoint anywhere: NoLocalEndpoint", []*vipapi.NodeVIP{testVIP("idle", "10.0.0.7", "Local", "a", "b", "c")}, nil,
			"no eligible node: a: " + holder.NoLocalEndpoint + "; b: " + holder.NoLocalEndpoint + "; c: " + holder.NotSchedulable, vipapi.ReasonNoLocalEndpoint, false, false},
		{"local policy, the nodes out for other reasons: NoEligibleNode", []*vipapi.NodeVIP{testVIP("idle", "10.0.0.8", "Local", "c", "d")}, nil,
			"no eligible node: c: " + holder.NotSchedulable + "; d: " + holder.NotReady, vipapi.ReasonNoEligibleNode, false, false},
		{"two interfaces for one address", []*vipapi.NodeVIP{testVIP("web", "10.0.0.6", "Cluster", "a"), func() *vipapi.NodeVIP {
			v := testVIP("web2", "10.0.0.6", "Cluster", "a")
			v.Spec.Interface = "eth1"
			return v
		}()}, nil, "", "", true, false},
		{"on standby: no holder", []*vipapi.NodeVIP{standbyVIP(testVIP("web", "10.0.0.9", "Cluster", "a", "b"))}, []string{"a", "b"}, "", "", false, true},
		{"shared, one Service taken over: held", []*vipapi.NodeVIP{standbyVIP(testVIP("web", "10.0.0.10", "Cluster", "a", "b")), testVIP("web2", "10.0.0.10", "Cluster", "a", "b")},
			[]string{"a", "b"}, "", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := decide(tc.vips, w)
			if len(ds) != 1 {
				t.Fatalf("%d decisions, want 1", len(ds))
			}
			d := ds[0]
			if (d.Invalid != "") != tc.invalid {
				t.Fatalf("Invalid = %q", d.Invalid)
			}
			if !slices.Equal(d.Candidates, tc.candidates) {
				t.Errorf("candidates %v, want %v", d.Candidates, tc.candidates)
			}
			if d.Standby != tc.standby {
				t.Errorf("standby %t, want %t", d.Standby, tc.standby)
			}
			want := holder.Choose(tc.vips[0].Spec.Address, tc.candidates)
			if tc.standby {
				want = ""
			}
			if !tc.invalid && d.Holder != want {
				t.Errorf("holder %q, want %q", d.Holder, want)
			}
			if d.Why != tc.why || d.WhyReason != tc.reason {
				t.Errorf("why %q (%s)\nwant %q (%s)", d.Why, d.WhyReason, tc.why, tc.reason)
			}
			if d.Reporter == "" {
				t.Error("no reporter")
			}
		})
	}
}

func standbyVIP(v *vipapi.NodeVIP) *vipapi.NodeVIP {
	v.Spec.Standby = true
	return v
}

// TestDecideKeepsTheHolder: the holder a NodeVIP's status names keeps the
// address while it stays a candidate (a returning node takes nothing back);
// a holder that is out, or a status not announced, leaves it to the hash.
func TestDecideKeepsTheHolder(t *testing.T) {
	w := view{
		nodes: map[string]*corev1.Node{"a": testNode("a", true, false), "b": testNode("b", true, false), "c": testNode("c", true, false), "x": testNode("x", true, true)},
		members: map[string]member{
			"a": {Name: "a", meta: meta{Eligible: true}}, "b": {Name: "b", meta: meta{Eligible: true}},
			"c": {Name: "c", meta: meta{Eligible: true}}, "x": {Name: "x", meta: meta{Eligible: true}},
		},
		slices: func(ns, name string) []*discoveryv1.EndpointSlice { return nil },
	}
	const addr = "10.0.0.9"
	first := holder.Choose(addr, []string{"a", "b", "c"})
	var other string
	for _, n := range []string{"a", "b", "c"} {
		if n != first {
			other = n
			break
		}
	}
	held := func(name, node string, announced metav1.ConditionStatus) *vipapi.NodeVIP {
		v := testVIP(name, addr, "Cluster", "a", "b", "c", "x")
		v.Status.Holder = node
		v.Status.Conditions = []metav1.Condition{{Type: vipapi.ConditionAnnounced, Status: announced, Reason: vipapi.ReasonAnnounced}}
		return v
	}
	for _, tc := range []struct {
		name string
		vips []*vipapi.NodeVIP
		want string
	}{
		{"no status: the hash", []*vipapi.NodeVIP{testVIP("web", addr, "Cluster", "a", "b", "c", "x")}, first},
		{"held by another candidate: it keeps it", []*vipapi.NodeVIP{held("web", other, metav1.ConditionTrue)}, other},
		{"held by a cordoned node: the hash", []*vipapi.NodeVIP{held("web", "x", metav1.ConditionTrue)}, first},
		{"not announced: the hash", []*vipapi.NodeVIP{held("web", other, metav1.ConditionFalse)}, first},
		{"shared address, one status names the holder", []*vipapi.NodeVIP{held("web", other, metav1.ConditionTrue), testVIP("web2", addr, "Cluster", "a", "b", "c")}, other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := decide(tc.vips, w)
			if len(ds) != 1 || ds[0].Holder != tc.want {
				t.Fatalf("decisions %+v, want holder %q", ds, tc.want)
			}
		})
	}
}

// TestMayOverwrite: the holder writes its status at once unless the status
// names another holder and it overwrote that less than overwriteEvery ago
// (two holders that do not hear each other write no loop); a write that
// failed (nothing recorded) is retried at once.
func TestMayOverwrite(t *testing.T) {
	a := &Agent{cfg: Config{NodeName: "a"}, overwrote: map[string]time.Time{}, held: map[string]heldVIP{}}
	named := func(node string) decision {
		v := testVIP("web", "10.0.0.1", "Cluster", "a", "b")
		if node != "" {
			v.Status.Holder = node
			v.Status.Conditions = []metav1.Condition{{Type: vipapi.ConditionAnnounced, Status: metav1.ConditionTrue}}
		}
		return decision{Address: netip.MustParseAddr("10.0.0.1"), VIPs: []*vipapi.NodeVIP{v}}
	}
	t0 := time.Now()
	for _, tc := range []struct {
		name      string
		status    string
		at        time.Duration
		written   bool // the write succeeded (reconcile records it)
		other, ok bool
	}{
		{"no holder named: write", "", 0, true, false, true},
		{"itself named: write", "a", 0, true, false, true},
		{"another named, the write fails", "b", 0, false, true, true},
		{"another named: retried at once", "b", 100 * time.Millisecond, true, true, true},
		{"another named again soon after: wait", "b", time.Second, false, true, false},
		{"itself named meanwhile: write", "a", 2 * time.Second, true, false, true},
		{"another named after the interval: write", "b", 100*time.Millisecond + overwriteEvery, true, true, true},
	} {
		other, ok := a.mayOverwrite(named(tc.status), t0.Add(tc.at))
		if other != tc.other || ok != tc.ok {
			t.Errorf("%s: mayOverwrite = %v, %v, want %v, %v", tc.name, other, ok, tc.other, tc.ok)
		}
		if ok && other && tc.written {
			a.overwrote["10.0.0.1"] = t0.Add(tc.at)
		}
	}
}

// TestWaitHandover: a new holder waits (at most handoverDelay) for an old
// holder that is alive and eligible in the gossip to let go; it takes at
// once from one that is gone or gossips itself not eligible.
func TestWaitHandover(t *testing.T) {
	held := func(node string) decision {
		v := testVIP("web", "10.0.0.1", "Cluster", "a", "b")
		v.Status.Holder = node
		v.Status.Conditions = []metav1.Condition{{Type: vipapi.ConditionAnnounced, Status: metav1.ConditionTrue}}
		return decision{Address: netip.MustParseAddr("10.0.0.1"), VIPs: []*vipapi.NodeVIP{v}}
	}
	alive := map[string]member{"a": {Name: "a", meta: meta{Eligible: true}}, "b": {Name: "b", meta: meta{Eligible: true}}}
	ineligible := map[string]member{"a": {Name: "a", meta: meta{Eligible: true}}, "b": {Name: "b", meta: meta{Why: "its kubelet does not answer"}}}
	gone := map[string]member{"a": {Name: "a", meta: meta{Eligible: true}}}
	t0 := time.Now()
	for _, tc := range []struct {
		name    string
		d       decision
		members map[string]member
		at      time.Duration
		want    bool
	}{
		{"no holder named: take", held(""), alive, 0, false},
		{"the old holder is gone: take", held("b"), gone, 0, false},
		{"the old holder gossips not eligible: take", held("b"), ineligible, 0, false},
		{"the old holder is alive and eligible (cordoned): wait", held("b"), alive, 0, true},
		{"still within the delay: wait", held("b"), alive, handoverDelay / 2, true},
		{"the delay is over: take anyway", held("b"), alive, handoverDelay, false},
	} {
		a := &Agent{cfg: Config{NodeName: "a"}, handover: map[string]time.Time{}, trigger: make(chan struct{}, 1)}
		if tc.at > 0 {
			a.handover["10.0.0.1"] = t0
		}
		if got := a.waitHandover(tc.d, tc.members, t0.Add(tc.at)); got != tc.want {
			t.Errorf("%s: waitHandover = %v, want %v", tc.name, got, tc.want)
		}
	}
}
