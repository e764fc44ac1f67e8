package lbcontroller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tfccm/tfccm/workspace"
)

// TestLoadBalancerFollowsNodeAndServiceChanges: changes the service
// controller does not sync on (a joining node's addresses set after its
// providerID, a label-only Service edit) still re-render the workspace
// through tfccm's own informers; a Service being deleted is never
// re-rendered.
func TestLoadBalancerFollowsNodeAndServiceChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	joined := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}, Spec: corev1.NodeSpec{ProviderID: "terraform://local/node-c"}}
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-x"}}
	svc := phaseService()
	client := fake.NewClientset(joined, other, svc)
	f := informers.NewSharedInformerFactory(client, 0)
	eng := &fakeLBEngine{status: workspace.Status{Phase: workspace.PhaseRunning}}
	l, _ := newPhaseTest(eng, fakeRenderer{})
	l.watch(f)
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	go l.runResync(ctx)

	// The service controller renders the joining node without addresses.
	if err := l.UpdateLoadBalancer(ctx, "c", svc, []*corev1.Node{joined}); err != nil {
		t.Fatal(err)
	}
	waitApplied := func(want string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			files := eng.appliedFiles()
			return len(files) > 0 && files[len(files)-1] == want, nil
		})
		if err != nil {
			t.Fatalf("last applied %q, want %q", eng.appliedFiles(), want)
		}
	}
	waitApplied("# web node node-c=")

	// The node controller sets its addresses in a later update.
	c := joined.DeepCopy()
	c.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.250.0.13"}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitApplied("# web node node-c=10.250.0.13")

	// A node the load balancer does not use changes nothing.
	before := len(eng.appliedFiles())
	x := other.DeepCopy()
	x.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.250.0.99"}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, x, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A label-only Service edit reaches the template.
	s := svc.DeepCopy()
	s.Labels = map[string]string{"team": "web"}
	if _, err := client.CoreV1().Services(s.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitApplied("# web label team=web node node-c=10.250.0.13")
	if n := len(eng.appliedFiles()); n != before+1 {
		t.Errorf("%d applies after the unrelated node and the label edit, want %d", n, before+1)
	}

	// Deleted: nothing is submitted for the Service again.
	eng.mu.Lock()
	eng.status = workspace.Status{Phase: workspace.PhaseRunning, Destroy: true}
	eng.mu.Unlock()
	if err := l.EnsureLoadBalancerDeleted(ctx, "c", svc); err == nil {
		t.Fatal("in-flight destroy released the finalizer")
	}
	applies := len(eng.appliedFiles())
	if err := l.UpdateLoadBalancer(ctx, "c", svc, []*corev1.Node{joined}); err != nil {
		t.Fatalf("update of a deleting Service: %v", err)
	}
	c2 := c.DeepCopy()
	c2.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.250.0.14"}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, c2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the resync would have run by now
	if got := eng.appliedFiles(); len(got) != applies || slices.Contains(got, "# web label team=web node node-c=10.250.0.14") {
		t.Errorf("a deleting Service's load balancer was applied again: %q", got[applies:])
	}
}

func TestRenderedNodeChanged(t *testing.T) {
	base := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "1"}, ResourceVersion: "1"}}
	for _, tc := range []struct {
		name   string
		change func(n *corev1.Node)
		want   bool
	}{
		{"heartbeat only", func(n *corev1.Node) {
			n.ResourceVersion = "2"
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		}, false},
		{"addresses", func(n *corev1.Node) {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}
		}, true},
		{"zone label", func(n *corev1.Node) { n.Labels["topology.kubernetes.io/zone"] = "z" }, true},
		{"provider id", func(n *corev1.Node) { n.Spec.ProviderID = "terraform://x" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := base.DeepCopy()
			tc.change(n)
			if got := renderedNodeChanged(base, n); got != tc.want {
				t.Fatalf("renderedNodeChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

// versionedRenderer renders like fakeRenderer plus the current template
// version, as a changed override would.
type versionedRenderer struct {
	fakeRenderer
	version *string
}

func (r versionedRenderer) RenderLoadBalancer(svc *corev1.Service, nodes []*corev1.Node) (*workspace.Spec, error) {
	spec, err := r.fakeRenderer.RenderLoadBalancer(svc, nodes)
	if err != nil {
		return nil, err
	}
	spec.Files["main.tf"] = append(spec.Files["main.tf"], " "+*r.version...)
	spec.Hash = spec.ContentHash()
	return spec, nil
}

// TestTemplateChangeReRendersEveryWorkspace: a valid override change
// re-renders every live Service's workspace; a rejected one is an Event on
// each; deleted Services are left alone.
func TestTemplateChangeReRendersEveryWorkspace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	version := "v1"
	eng := &fakeLBEngine{status: workspace.Status{Phase: workspace.PhaseRunning}}
	l, events := newPhaseTest(eng, versionedRenderer{version: &version})
	l.nodes = corelisters.NewNodeLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})) // no nodes
	go l.runResync(ctx)
	a, b, gone := phaseService(), phaseService(), phaseService()
	b.Name, b.UID = "api", "u2"
	gone.Name, gone.UID = "old", "u3"
	for _, s := range []*corev1.Service{a, b, gone} {
		if err := l.UpdateLoadBalancer(ctx, "c", s, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.EnsureLoadBalancerDeleted(ctx, "c", gone); err == nil {
		t.Fatal("in-flight destroy released the finalizer")
	}
	version = "v2"
	l.resyncAll()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return len(eng.appliedFiles()) == 5, nil
	})
	got := eng.appliedFiles()
	if err != nil || !slices.Contains(got, "# web v2") || !slices.Contains(got, "# api v2") || slices.Contains(got, "# old v2") {
		t.Fatalf("applied %q, want web and api re-rendered with v2 and nothing for the deleted Service", got)
	}
	l.eventAll(corev1.EventTypeWarning, ReasonTemplateRejected, "template override rejected")
	if n := strings.Count(reasons(*events), ReasonTemplateRejected); n != 2 {
		t.Errorf("%d rejection Events, want 2 (live Services): %s", n, reasons(*events))
	}
}

// TestDeletedService: a DeleteFunc's object is the Service, or the last
// known state of one whose deletion the informer missed; anything else is
// no Service.
func TestDeletedService(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "u1"}}
	tests := []struct {
		name string
		obj  any
		want *corev1.Service
	}{
		{"a Service", svc, svc},
		{"a missed deletion", cache.DeletedFinalStateUnknown{Key: "default/web", Obj: svc}, svc},
		{"a missed deletion of another kind", cache.DeletedFinalStateUnknown{Key: "default/web", Obj: &corev1.Node{}}, nil},
		{"another kind", &corev1.Node{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := deletedService(tt.obj)
			if ok != (tt.want != nil) || got != tt.want {
				t.Fatalf("deletedService = %v, %v; want %v", got, ok, tt.want)
			}
		})
	}
}
