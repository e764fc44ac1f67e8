package ccm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// fakeRoutesEngine stands in for render+engine in unit tests of the
// batching logic: an apply of a desired set makes it the `routes` output,
// unless fail is set.
type fakeRoutesEngine struct {
	mu      sync.Mutex
	st      workspace.Status
	applies [][]templates.Route
	fail    error
	failIf  func([]templates.Route) error // if set, decides per desired set
	block   chan struct{}                 // if set, apply waits for it
}

func (f *fakeRoutesEngine) status() workspace.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeRoutesEngine) setOutput(t testing.TB, routes map[string]templates.RouteOutput) {
	t.Helper()
	raw, err := json.Marshal(routes)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st = workspace.Status{Name: "routes", Phase: workspace.PhaseApplied, AppliedHash: fmt.Sprintf("h%d", len(f.applies)+100),
		Outputs: map[string]json.RawMessage{"routes": raw}}
}

func (f *fakeRoutesEngine) apply(_ context.Context, desired []templates.Route) error {
	if f.block != nil {
		<-f.block
	}
	f.mu.Lock()
	f.applies = append(f.applies, desired)
	fail := f.fail
	if fail == nil && f.failIf != nil {
		fail = f.failIf(desired)
	}
	f.mu.Unlock()
	if fail != nil {
		return fail
	}
	out := map[string]any{}
	for _, r := range desired {
		out[r.Name] = map[string]any{"destination_cidr": r.DestinationCIDR, "target_node": r.TargetNode, "blackhole": r.Blackhole}
	}
	raw, _ := json.Marshal(out)
	f.mu.Lock()
	f.st = workspace.Status{Name: "routes", Phase: workspace.PhaseApplied, AppliedHash: fmt.Sprintf("h%d", len(f.applies)),
		Outputs: map[string]json.RawMessage{"routes": raw}}
	f.mu.Unlock()
	return nil
}

func (f *fakeRoutesEngine) applyCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.applies)
}

func (f *fakeRoutesEngine) lastApply() []templates.Route {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.applies) == 0 {
		return nil
	}
	return f.applies[len(f.applies)-1]
}

func newTestRoutes(f *fakeRoutesEngine, window time.Duration, nodes ...*corev1.Node) *routes {
	r := newRoutes(f, nil, window)
	if nodes != nil {
		r.setNodeLister(nodeLister(nodes...))
	}
	return r
}

func sameErr(err error, n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

func nodeLister(nodes ...*corev1.Node) corelisters.NodeLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range nodes {
		_ = idx.Add(n)
	}
	return corelisters.NewNodeLister(idx)
}

func routeTestNode(name, v4 string, cidrs ...string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.NodeSpec{PodCIDRs: cidrs},
		Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: v4}}},
	}
}

func createReq(n *corev1.Node, cidr string) *cloudprovider.Route {
	return &cloudprovider.Route{TargetNode: types.NodeName(n.Name), DestinationCIDR: cidr, TargetNodeAddresses: n.Status.Addresses}
}

func names(rs []templates.Route) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

func TestBatcherCoalescesConcurrentCalls(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	release := make(chan struct{})
	first := make(chan struct{})
	b := newBatcher(2*time.Second, func(ops []*routeOp) []error {
		mu.Lock()
		sizes = append(sizes, len(ops))
		n := len(sizes)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release // calls arriving now belong to the next batch
		}
		return make([]error, len(ops))
	})
	var wg sync.WaitGroup
	call := func(i int) {
		defer wg.Done()
		if err := b.do(context.Background(), &routeOp{route: templates.Route{Name: fmt.Sprint(i)}}); err != nil {
			t.Error(err)
		}
	}
	for i := range 150 {
		wg.Add(1)
		go call(i)
	}
	<-first
	for i := range 30 {
		wg.Add(1)
		go call(1000 + i)
	}
	time.Sleep(50 * time.Millisecond) // let them queue behind the running batch
	close(release)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(sizes, []int{150, 30}) {
		t.Errorf("batch sizes = %v, want [150 30]", sizes)
	}
}

func TestBatcherFailureReleasesEveryCall(t *testing.T) {
	boom := errors.New("Error: exit status 2: ip: RTNETLINK answers: Network is unreachable")
	b := newBatcher(time.Second, func(ops []*routeOp) []error { return sameErr(boom, len(ops)) })
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- b.do(context.Background(), &routeOp{route: templates.Route{Name: fmt.Sprint(i)}})
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		n++
		if !errors.Is(err, boom) {
			t.Errorf("call returned %v, want the batch's error", err)
		}
	}
	if n != 40 {
		t.Errorf("%d calls returned, want 40", n)
	}
	if got := b.batches.Load(); got != 1 {
		t.Errorf("%d batches, want 1", got)
	}
}

func TestBatcherCallerContextEndsOnlyItsWait(t *testing.T) {
	release := make(chan struct{})
	var got []*routeOp
	b := newBatcher(0, func(ops []*routeOp) []error { <-release; got = ops; return make([]error, len(ops)) })
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- b.do(ctx, &routeOp{route: templates.Route{Name: "a"}}) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call returned %v", err)
	}
	close(release)
	if err := b.do(context.Background(), &routeOp{route: templates.Route{Name: "b"}}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].route.Name != "b" || b.batches.Load() != 2 {
		t.Errorf("batches = %d, last = %v; the cancelled call's batch must still run", b.batches.Load(), got)
	}
}

func TestDesiredRoutes(t *testing.T) {
	a := routeTestNode("node-a", "10.250.0.11", "10.244.1.0/24", "fd00:10:244:1::/64")
	b := routeTestNode("node-b", "10.250.0.12", "10.244.2.0/24")
	noCIDR := routeTestNode("node-n", "10.250.0.13")
	str := func(s string) *string { return &s }
	prevAddr := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.250.0.99"}}
	cases := []struct {
		name    string
		applied map[string]templates.RouteOutput
		ops     []*routeOp
		nodes   []*corev1.Node
		prev    map[string]templates.Route
		want    []string
		check   func(t *testing.T, got map[string]templates.Route)
	}{
		{
			name:  "creates on empty, nodes unknown",
			ops:   []*routeOp{{route: templates.Route{Name: "node-a/10.244.1.0/24", DestinationCIDR: "10.244.1.0/24", TargetNode: "node-a"}}},
			want:  []string{"node-a/10.244.1.0/24"},
			check: nil,
		},
		{
			name:  "nodes with pod CIDRs get routes ahead of their calls; dual-stack gets two",
			ops:   []*routeOp{{route: templates.Route{Name: "node-b/10.244.2.0/24", DestinationCIDR: "10.244.2.0/24", TargetNode: "node-b"}}},
			nodes: []*corev1.Node{a, b, noCIDR},
			want:  []string{"node-a/10.244.1.0/24", "node-a/fd00:10:244:1::/64", "node-b/10.244.2.0/24"},
			check: func(t *testing.T, got map[string]templates.Route) {
				if ad := got["node-a/fd00:10:244:1::/64"].TargetNodeAddresses; len(ad) != 1 || ad[0].Address != "10.250.0.11" {
					t.Errorf("anticipated route addresses = %v", ad)
				}
			},
		},
		{
			name:    "delete wins over anticipation in the same batch",
			applied: map[string]templates.RouteOutput{"node-b/10.244.2.0/24": {DestinationCIDR: "10.244.2.0/24", TargetNode: str("node-b")}},
			ops:     []*routeOp{{del: true, route: templates.Route{Name: "node-b/10.244.2.0/24"}}},
			nodes:   []*corev1.Node{b},
			want:    []string{},
		},
		{
			name: "applied routes keep addresses: node first, then last submitted; unknown node dropped; blackhole kept",
			applied: map[string]templates.RouteOutput{
				"node-a/10.244.1.0/24": {DestinationCIDR: "10.244.1.0/24", TargetNode: str("node-a")},
				"node-x/10.244.8.0/24": {DestinationCIDR: "10.244.8.0/24", TargetNode: str("node-x")},
				"gone/10.244.9.0/24":   {DestinationCIDR: "10.244.9.0/24", TargetNode: str("gone")},
				"hole":                 {DestinationCIDR: "10.244.7.0/24", Blackhole: true},
			},
			nodes: []*corev1.Node{routeTestNode("node-a", "10.250.0.11")},
			prev:  map[string]templates.Route{"node-x/10.244.8.0/24": {Name: "node-x/10.244.8.0/24", TargetNodeAddresses: prevAddr}},
			want:  []string{"hole", "node-a/10.244.1.0/24", "node-x/10.244.8.0/24"},
			check: func(t *testing.T, got map[string]templates.Route) {
				if ad := got["node-a/10.244.1.0/24"].TargetNodeAddresses; len(ad) != 1 || ad[0].Address != "10.250.0.11" {
					t.Errorf("node-a addresses = %v", ad)
				}
				if ad := got["node-x/10.244.8.0/24"].TargetNodeAddresses; len(ad) != 1 || ad[0].Address != "10.250.0.99" {
					t.Errorf("node-x addresses = %v", ad)
				}
				if !got["hole"].Blackhole {
					t.Errorf("blackhole route lost its flag")
				}
			},
		},
		{
			name: "ops apply in arrival order",
			ops: []*routeOp{
				{route: templates.Route{Name: "n/10.244.3.0/24", DestinationCIDR: "10.244.3.0/24", TargetNode: "n"}},
				{del: true, route: templates.Route{Name: "n/10.244.3.0/24"}},
				{del: true, route: templates.Route{Name: "n/10.244.4.0/24"}},
				{route: templates.Route{Name: "n/10.244.4.0/24", DestinationCIDR: "10.244.4.0/24", TargetNode: "n"}},
			},
			want: []string{"n/10.244.4.0/24"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := desiredRoutes(tc.applied, tc.ops, tc.nodes, tc.prev, true)
			if !slices.Equal(names(got), tc.want) {
				t.Fatalf("desired = %v, want %v", names(got), tc.want)
			}
			if tc.check != nil {
				m := map[string]templates.Route{}
				for _, r := range got {
					m[r.Name] = r
				}
				tc.check(t, m)
			}
		})
	}
}

func TestRoutesCreateConcurrentlyIsOneApply(t *testing.T) {
	f := &fakeRoutesEngine{}
	r := newTestRoutes(f, 2*time.Second)
	var wg sync.WaitGroup
	for i := range 200 {
		n := routeTestNode(fmt.Sprintf("node-%03d", i), fmt.Sprintf("10.250.%d.%d", i/250, i%250+1), fmt.Sprintf("10.244.%d.0/24", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.CreateRoute(context.Background(), "c", string(n.UID), createReq(n, n.Spec.PodCIDRs[0])); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if f.applyCount() != 1 || len(f.lastApply()) != 200 {
		t.Fatalf("applies = %d (last with %d routes), want one with 200", f.applyCount(), len(f.lastApply()))
	}
	list, err := r.ListRoutes(context.Background(), "c")
	if err != nil || len(list) != 200 {
		t.Fatalf("ListRoutes = %d routes, %v", len(list), err)
	}
	if l := list[0]; l.Name != "node-000/10.244.0.0/24" || l.TargetNode != "node-000" || l.DestinationCIDR != "10.244.0.0/24" || l.Blackhole {
		t.Errorf("first listed route = %+v", l)
	}
	// Asking again for an applied route starts no apply.
	n := routeTestNode("node-000", "10.250.0.1", "10.244.0.0/24")
	if err := r.CreateRoute(context.Background(), "c", "", createReq(n, "10.244.0.0/24")); err != nil {
		t.Fatal(err)
	}
	if f.applyCount() != 1 {
		t.Errorf("re-creating an applied route ran an apply")
	}
	// Deleting one route is an apply of the other 199.
	if err := r.DeleteRoute(context.Background(), "c", list[5]); err != nil {
		t.Fatal(err)
	}
	if got := f.lastApply(); len(got) != 199 || slices.Contains(names(got), list[5].Name) {
		t.Errorf("after delete: %d routes, deleted one present: %v", len(got), slices.Contains(names(got), list[5].Name))
	}
}

func TestRoutesFailedBatchFailsEveryCallAndKeepsApplied(t *testing.T) {
	f := &fakeRoutesEngine{}
	a := routeTestNode("node-a", "10.250.0.11", "10.244.1.0/24")
	r := newTestRoutes(f, 500*time.Millisecond)
	if err := r.CreateRoute(context.Background(), "c", "", createReq(a, "10.244.1.0/24")); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.fail = errors.New("apply: Error: Resource precondition failed: node node-b has no InternalIP of the IPv6 family")
	f.mu.Unlock()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for _, c := range []string{"10.244.2.0/24", "fd00:10:244:2::/64", "10.244.3.0/24"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- r.CreateRoute(context.Background(), "c", "", createReq(routeTestNode("node-b", "10.250.0.12"), c))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err == nil || !strings.Contains(err.Error(), "no InternalIP of the IPv6 family") {
			t.Errorf("call in failed batch returned %v", err)
		}
	}
	// One batch for the three calls: the full set, then without routes
	// ahead of calls, then halves until each failing call is alone:
	// [a] | [b c] -> [b] | [c]. 1 + 6 applies.
	if f.applyCount() != 7 {
		t.Fatalf("applies = %d, want 7", f.applyCount())
	}
	list, _ := r.ListRoutes(context.Background(), "c")
	if len(list) != 1 || list[0].Name != "node-a/10.244.1.0/24" {
		t.Errorf("ListRoutes after a failed batch = %v, want only node-a's route", list)
	}
	// The next batch starts from what is applied, not from the failed set.
	f.mu.Lock()
	f.fail = nil
	f.mu.Unlock()
	if err := r.CreateRoute(context.Background(), "c", "", createReq(routeTestNode("node-c", "10.250.0.13"), "10.244.4.0/24")); err != nil {
		t.Fatal(err)
	}
	if got := names(f.lastApply()); !slices.Equal(got, []string{"node-a/10.244.1.0/24", "node-c/10.244.4.0/24"}) {
		t.Errorf("batch after a failure applied %v", got)
	}
}

func TestRoutesRestartSeedsFromAppliedOutput(t *testing.T) {
	// An earlier incarnation applied node-a's two routes, a route to a
	// node that has since gone, and a blackhole.
	f := &fakeRoutesEngine{}
	str := func(s string) *string { return &s }
	f.setOutput(t, map[string]templates.RouteOutput{
		"node-a/10.244.1.0/24":      {DestinationCIDR: "10.244.1.0/24", TargetNode: str("node-a")},
		"node-a/fd00:10:244:1::/64": {DestinationCIDR: "fd00:10:244:1::/64", TargetNode: str("node-a")},
		"gone/10.244.9.0/24":        {DestinationCIDR: "10.244.9.0/24", TargetNode: str("gone")},
		"blackhole/10.244.8.0/24":   {DestinationCIDR: "10.244.8.0/24", Blackhole: true},
	})
	a := routeTestNode("node-a", "10.250.0.11", "10.244.1.0/24", "fd00:10:244:1::/64")
	a.Status.Addresses = append(a.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00:250::11"})
	b := routeTestNode("node-b", "10.250.0.12", "10.244.2.0/24")
	r := newTestRoutes(f, 200*time.Millisecond, a, b)

	// ListRoutes answers from the record before anything ran.
	list, err := r.ListRoutes(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, l := range list {
		listed = append(listed, fmt.Sprintf("%s>%s bh=%v", l.Name, l.TargetNode, l.Blackhole))
	}
	want := []string{"blackhole/10.244.8.0/24> bh=true", "gone/10.244.9.0/24>gone bh=false", "node-a/10.244.1.0/24>node-a bh=false", "node-a/fd00:10:244:1::/64>node-a bh=false"}
	if !slices.Equal(listed, want) {
		t.Errorf("ListRoutes = %v, want %v", listed, want)
	}

	if err := r.CreateRoute(context.Background(), "c", "", createReq(b, "10.244.2.0/24")); err != nil {
		t.Fatal(err)
	}
	got := f.lastApply()
	if !slices.Equal(names(got), []string{"blackhole/10.244.8.0/24", "node-a/10.244.1.0/24", "node-a/fd00:10:244:1::/64", "node-b/10.244.2.0/24"}) {
		t.Fatalf("first batch after restart applied %v", names(got))
	}
	for _, rt := range got {
		if rt.Name == "node-a/fd00:10:244:1::/64" && len(rt.TargetNodeAddresses) != 2 {
			t.Errorf("seeded route lost its node addresses: %+v", rt)
		}
	}
}

func TestRoutesBadInputChangesNothing(t *testing.T) {
	f := &fakeRoutesEngine{}
	r := newTestRoutes(f, 0)
	for _, req := range []*cloudprovider.Route{
		nil,
		{TargetNode: "node-a", DestinationCIDR: "10.244.1.0"},
		{TargetNode: "node-a", DestinationCIDR: "10.244.1.0/24\"; rm -rf /"},
		{DestinationCIDR: "10.244.1.0/24"},
	} {
		if err := r.CreateRoute(context.Background(), "c", "", req); err == nil {
			t.Errorf("CreateRoute(%+v) accepted", req)
		}
	}
	if f.applyCount() != 0 {
		t.Errorf("bad input ran %d applies", f.applyCount())
	}
}

func TestListRoutesBadOutput(t *testing.T) {
	for _, raw := range []string{`"(sensitive)"`, `[1,2]`} {
		f := &fakeRoutesEngine{st: workspace.Status{AppliedHash: "x", Phase: workspace.PhaseApplied, Outputs: map[string]json.RawMessage{"routes": json.RawMessage(raw)}}}
		if _, err := newTestRoutes(f, 0).ListRoutes(context.Background(), "c"); err == nil {
			t.Errorf("routes output %s accepted", raw)
		}
	}
	f := &fakeRoutesEngine{st: workspace.Status{AppliedHash: "x", Phase: workspace.PhaseApplied, Outputs: map[string]json.RawMessage{}}}
	if _, err := newTestRoutes(f, 0).ListRoutes(context.Background(), "c"); err == nil || !strings.Contains(err.Error(), "no `routes` output") {
		t.Errorf("missing output: %v", err)
	}
	if l, err := newTestRoutes(&fakeRoutesEngine{}, 0).ListRoutes(context.Background(), "c"); err != nil || len(l) != 0 {
		t.Errorf("never applied: %v, %v", l, err)
	}
}

func TestRoutesEnabled(t *testing.T) {
	yes, no := true, false
	settings := cty.ObjectVal(map[string]cty.Value{"cloud_netns": cty.StringVal("x")})
	cases := []struct {
		name string
		r    *config.Routes
		want bool
	}{
		{"unconfigured", &config.Routes{Settings: cty.EmptyObjectVal}, false},
		{"settings given", &config.Routes{Settings: settings}, true},
		{"batch window given", &config.Routes{Settings: cty.EmptyObjectVal, BatchWindowRaw: "1s"}, true},
		{"enabled explicitly", &config.Routes{Enabled: &yes, Settings: cty.EmptyObjectVal}, true},
		{"disabled with settings", &config.Routes{Enabled: &no, Settings: settings}, false},
	}
	for _, tc := range cases {
		if got := routesEnabled(&config.Config{Routes: tc.r}); got != tc.want {
			t.Errorf("%s: routesEnabled = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// failOn fails any desired set holding a route whose name contains bad.
func failOn(bad string) func([]templates.Route) error {
	return func(desired []templates.Route) error {
		for _, d := range desired {
			if strings.Contains(d.Name, bad) {
				return fmt.Errorf("apply: Error: Resource precondition failed: route %s cannot be created", d.Name)
			}
		}
		return nil
	}
}

func TestRoutesBadCallDoesNotBlockTheOthers(t *testing.T) {
	f := &fakeRoutesEngine{failIf: failOn("node-bad/")}
	r := newTestRoutes(f, time.Second)
	var wg sync.WaitGroup
	results := map[string]error{}
	var mu sync.Mutex
	nodes := []string{"node-1", "node-2", "node-3", "node-bad", "node-5", "node-6", "node-7", "node-8"}
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := r.CreateRoute(context.Background(), "c", "", createReq(routeTestNode(n, fmt.Sprintf("10.250.0.%d", 20+i)), fmt.Sprintf("10.244.%d.0/24", 20+i)))
			mu.Lock()
			results[n] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, n := range nodes {
		if n == "node-bad" {
			if results[n] == nil || !strings.Contains(results[n].Error(), "node-bad/10.244.23.0/24 cannot be created") {
				t.Errorf("bad call returned %v", results[n])
			}
		} else if results[n] != nil {
			t.Errorf("%s failed with the bad route: %v", n, results[n])
		}
	}
	list, _ := r.ListRoutes(context.Background(), "c")
	if len(list) != 7 {
		t.Errorf("applied %d routes, want the 7 good ones", len(list))
	}
	// full + without ahead + halves down to the bad one: bounded by 2 + 2*log2(8).
	if n := f.applyCount(); n > 8 {
		t.Errorf("%d applies to isolate one bad route among 8", n)
	}
}

func TestRoutesBadAheadRouteDoesNotBlockCalls(t *testing.T) {
	// node-bad has a pod CIDR the template cannot route; the route
	// controller's call for node-good must still succeed.
	bad := routeTestNode("node-bad", "10.250.0.30", "10.244.30.0/24")
	good := routeTestNode("node-good", "10.250.0.31", "10.244.31.0/24")
	f := &fakeRoutesEngine{failIf: failOn("node-bad/")}
	r := newTestRoutes(f, 200*time.Millisecond, bad, good)
	if err := r.CreateRoute(context.Background(), "c", "", createReq(good, "10.244.31.0/24")); err != nil {
		t.Fatalf("good call failed because of a bad route ahead of calls: %v", err)
	}
	if got := names(f.lastApply()); !slices.Equal(got, []string{"node-good/10.244.31.0/24"}) {
		t.Errorf("applied %v", got)
	}
	if n := f.applyCount(); n != 2 {
		t.Errorf("applies = %d, want 2 (with ahead routes, then without)", n)
	}
}

func TestRoutesPendingReviewIsNotSplit(t *testing.T) {
	f := &fakeRoutesEngine{fail: fmt.Errorf("apply routes: %w", workspace.ErrAwaitingApproval)}
	r := newTestRoutes(f, 300*time.Millisecond)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := r.CreateRoute(context.Background(), "c", "", createReq(routeTestNode(fmt.Sprintf("n%d", i), fmt.Sprintf("10.250.0.%d", 40+i)), fmt.Sprintf("10.244.%d.0/24", 40+i)))
			if !errors.Is(err, workspace.ErrAwaitingApproval) {
				t.Errorf("call returned %v, want awaiting approval", err)
			}
		}()
	}
	wg.Wait()
	if n := f.applyCount(); n != 1 {
		t.Errorf("applies = %d, want 1: a pending review is not a bad route", n)
	}
}
