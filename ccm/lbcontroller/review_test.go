package lbcontroller

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/plans"
)

func TestPlanData(t *testing.T) {
	hash := strings.Repeat("a", 64)
	small := &plans.PendingPlan{Hash: hash, Add: 1, Text: "Plan: 1 to add", JSON: []byte(`{"x":1}`)}
	big := &plans.PendingPlan{Hash: hash, Change: 2, Text: strings.Repeat("t", 2<<20), JSON: []byte(strings.Repeat("j", 100))}
	mid := &plans.PendingPlan{Hash: hash, Remove: 3, Text: strings.Repeat("t", 600<<10), JSON: []byte(strings.Repeat("j", 600<<10))}
	for _, tc := range []struct {
		name      string
		p         *plans.PendingPlan
		truncated bool
		json      bool
		summary   string
	}{
		{"small", small, false, true, "1 to add, 0 to change, 0 to destroy"},
		{"text above the limit", big, true, true, "0 to add, 2 to change, 0 to destroy"},
		{"json does not fit", mid, false, false, "0 to add, 0 to change, 3 to destroy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := planData(tc.p, maxPublishedPlan)
			size := 0
			for k, v := range d {
				size += len(k) + len(v)
			}
			if size > maxPublishedPlan {
				t.Errorf("data is %d bytes, above %d", size, maxPublishedPlan)
			}
			if d["summary"] != tc.summary || d["plan-hash"] != hash {
				t.Errorf("summary %q hash %q", d["summary"], d["plan-hash"])
			}
			if got := strings.Contains(d["plan.txt"], "[truncated by tfccm"); got != tc.truncated {
				t.Errorf("truncation marker present = %v, want %v", got, tc.truncated)
			}
			if !tc.truncated && d["plan.txt"] != tc.p.Text {
				t.Error("text changed although it fits")
			}
			if _, got := d["plan.json"]; got != tc.json {
				t.Errorf("plan.json present = %v, want %v", got, tc.json)
			}
			if _, omitted := d["plan.json.omitted"]; omitted == tc.json {
				t.Errorf("plan.json.omitted note present = %v", omitted)
			}
		})
	}
}

func TestPendingMessage(t *testing.T) {
	p := &plans.PendingPlan{Hash: strings.Repeat("c", 64), Destroy: true, Remove: 1}
	msg := pendingMessage("tfccm", "lb-x", p, approveCommand(phaseService()))
	for _, want := range []string{"destroy plan " + p.Hash, "0 to add, 0 to change, 1 to destroy", "tfccm/tfccm-plan-lb-x",
		"tfccm approve --namespace ns --service web --plan-hash " + p.Hash, "tfccm.io/approved-plan=" + p.Hash + " on that ConfigMap"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

// TestReplacedPlanIsNamed: a plan made for new inputs names the plan it
// replaced, which can no longer be approved.
func TestReplacedPlanIsNamed(t *testing.T) {
	old := strings.Repeat("a", 64)
	p := &plans.PendingPlan{Hash: strings.Repeat("b", 64), Replaces: old, Add: 1}
	if msg := pendingMessage("tfccm", "lb-x", p, approveCommand(nil)); !strings.HasPrefix(msg, "apply plan "+p.Hash+" awaiting approval (replaces plan "+old+": the inputs changed;") {
		t.Errorf("message %q does not name the replaced plan", msg)
	}
	// A plan replaced because the state changed under it says so, not that
	// the inputs changed.
	p.ReplacedWhy = "the state changed since it was made (serial 2 of lineage l, now serial 3 of lineage l)"
	if msg := pendingMessage("tfccm", "lb-x", p, approveCommand(nil)); !strings.Contains(msg, "(replaces plan "+old+": "+p.ReplacedWhy+"; that plan can no longer be approved)") || strings.Contains(msg, "inputs") {
		t.Errorf("message %q does not say the state changed", msg)
	}
}

// TestDriftRepairIsNamed: a drift repair awaiting approval says so in the
// Event and in the summary the plan ConfigMap publishes.
func TestDriftRepairIsNamed(t *testing.T) {
	p := &plans.PendingPlan{Hash: strings.Repeat("d", 64), Drift: true, Add: 1, Remove: 1}
	if msg := pendingMessage("tfccm", "lb-x", p, approveCommand(nil)); !strings.HasPrefix(msg, "drift repair plan "+p.Hash) || !strings.Contains(msg, "drifted") {
		t.Errorf("message %q does not name the drift repair", msg)
	}
	if data := planData(p, maxPublishedPlan); !strings.HasPrefix(data["summary"], "drift repair") {
		t.Errorf("published summary %q does not name the drift repair", data["summary"])
	}
}

// approveEngine answers Approve with err.
type approveEngine struct{ err error }

func (a approveEngine) Approve(string, string) error   { return a.err }
func (a approveEngine) Status(string) workspace.Status { return workspace.Status{} }

// TestReapprovingAnAppliedPlanSaysSo: an approval naming the plan that
// was already applied gets one Normal Event saying so, however often the
// Service is synced.
func TestReapprovingAnAppliedPlanSaysSo(t *testing.T) {
	var events []recordedEvent
	rv := newReviewer(approveEngine{err: fmt.Errorf("approve lb-c-u1: %w", workspace.ErrAlreadyApplied)}, fakeRenderer{}, func(_ runtime.Object, typ, reason, msg string) {
		events = append(events, recordedEvent{typ, reason, msg})
	}, "tfccm")
	rv.setClient(fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tfccm", Name: annotations.PlanConfigMapName("lb-c-u1"),
		Annotations: map[string]string{annotations.ApprovedPlan.Name: strings.Repeat("e", 64)}}}))
	svc := phaseService()
	for range 3 {
		rv.approveService(svc)
	}
	if len(events) != 1 || events[0].reason != ReasonPlanAlreadyApplied || !strings.Contains(events[0].message, "already approved and applied") {
		t.Fatalf("events = %+v, want one %s", events, ReasonPlanAlreadyApplied)
	}
}

// TestApprovalOnlyWhereTenantsCannotWrite: a plan is approved only by the
// annotation on its ConfigMap in tfccm's namespace. The annotation on the
// Service, or on a ConfigMap of the plan's name in the Service's own
// namespace (both a tenant's to write), approves nothing; the one on the
// Service is told as ignored, once per value, naming the ConfigMap and
// the command.
func TestApprovalOnlyWhereTenantsCannotWrite(t *testing.T) {
	hash := strings.Repeat("a", 64)
	other := strings.Repeat("b", 64)
	planCM := func(ns string, approval string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: annotations.PlanConfigMapName("lb-c-u1")}}
		if approval != "" {
			cm.Annotations = map[string]string{annotations.ApprovedPlan.Name: approval}
		}
		return cm
	}
	for _, tc := range []struct {
		name       string
		onService  string
		objects    []runtime.Object
		approved   []string
		wantReason string
	}{
		{name: "nothing approved"},
		{name: "annotation on the Service", onService: hash, objects: []runtime.Object{planCM("tfccm", "")}, wantReason: ReasonApprovalIgnored},
		{name: "ConfigMap in the Service's namespace", objects: []runtime.Object{planCM("ns", hash), planCM("tfccm", "")}},
		{name: "ConfigMap in tfccm's namespace", objects: []runtime.Object{planCM("tfccm", hash)}, approved: []string{"lb-c-u1=" + hash}},
		{name: "both: only tfccm's counts", onService: other, objects: []runtime.Object{planCM("tfccm", hash)}, approved: []string{"lb-c-u1=" + hash}, wantReason: ReasonApprovalIgnored},
		{name: "invalid value on tfccm's ConfigMap", objects: []runtime.Object{planCM("tfccm", "nope")}, wantReason: ReasonPlanNotApproved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var approved []string
			var events []recordedEvent
			rv := newReviewer(recordingApprover{&approved}, fakeRenderer{}, func(_ runtime.Object, typ, reason, msg string) {
				events = append(events, recordedEvent{typ, reason, msg})
			}, "tfccm")
			rv.setClient(fake.NewClientset(tc.objects...))
			svc := phaseService()
			if tc.onService != "" {
				svc.Annotations = map[string]string{annotations.ApprovedPlan.Name: tc.onService}
			}
			for range 2 {
				rv.approveService(svc)
			}
			if want := append(tc.approved, tc.approved...); !slices.Equal(approved, want) {
				t.Errorf("approved %v, want %v", approved, want)
			}
			if tc.wantReason == "" {
				if len(events) != 0 {
					t.Errorf("events %+v, want none", events)
				}
				return
			}
			if len(events) != 1 || events[0].reason != tc.wantReason || events[0].eventType != corev1.EventTypeWarning {
				t.Fatalf("events %+v, want one Warning %s", events, tc.wantReason)
			}
			if tc.wantReason == ReasonApprovalIgnored {
				for _, want := range []string{"approves nothing", "tfccm/tfccm-plan-lb-c-u1", "tfccm approve --namespace ns --service web", "nothing applied"} {
					if !strings.Contains(events[0].message, want) {
						t.Errorf("message %q lacks %q", events[0].message, want)
					}
				}
			}
		})
	}
}

// TestPublishInTfccmsNamespace: a plan is published in tfccm's namespace,
// labelled with its Service; a new plan drops the approval of the plan it
// replaces, and the same plan published again (taken back after a
// restart) keeps its approval.
func TestPublishInTfccmsNamespace(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	rv := newReviewer(approveEngine{}, fakeRenderer{}, func(runtime.Object, string, string, string) {}, "tfccm")
	rv.setClient(client)
	svc := phaseService()
	h1, h2 := strings.Repeat("1", 64), strings.Repeat("2", 64)
	get := func() *corev1.ConfigMap {
		t.Helper()
		cm, err := client.CoreV1().ConfigMaps("tfccm").Get(ctx, annotations.PlanConfigMapName("lb-c-u1"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	approve := func(hash string) {
		t.Helper()
		cm := get()
		cm.Annotations[annotations.ApprovedPlan.Name] = hash
		if _, err := client.CoreV1().ConfigMaps("tfccm").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rv.publish(ctx, "lb-c-u1", svc, &plans.PendingPlan{Hash: h1, Add: 1}); err != nil {
		t.Fatal(err)
	}
	if list, _ := client.CoreV1().ConfigMaps("ns").List(ctx, metav1.ListOptions{}); len(list.Items) != 0 {
		t.Fatalf("%d ConfigMaps in the Service's namespace", len(list.Items))
	}
	cm := get()
	want := map[string]string{annotations.ManagedBy: "tfccm", annotations.PlanKind: annotations.PlanOfLoadBalancer,
		annotations.PlanServiceUID: "u1", annotations.PlanServiceNamespace: "ns", annotations.PlanServiceName: "web"}
	if !maps.Equal(cm.Labels, want) || cm.Annotations[annotations.PlanHash] != h1 {
		t.Fatalf("labels %v annotations %v", cm.Labels, cm.Annotations)
	}
	approve(h1)
	if err := rv.publish(ctx, "lb-c-u1", svc, &plans.PendingPlan{Hash: h2, Add: 2}); err != nil {
		t.Fatal(err)
	}
	if a, ok := get().Annotations[annotations.ApprovedPlan.Name]; ok {
		t.Errorf("the replaced plan's approval %s survived a new plan", a)
	}
	approve(h2)
	if err := rv.publish(ctx, "lb-c-u1", svc, &plans.PendingPlan{Hash: h2, Add: 2}); err != nil {
		t.Fatal(err)
	}
	if a := get().Annotations[annotations.ApprovedPlan.Name]; a != h2 {
		t.Errorf("approval %q after publishing the same plan again, want %s", a, h2)
	}
	rv.unpublish(ctx, "lb-c-u1")
	if _, err := client.CoreV1().ConfigMaps("tfccm").Get(ctx, annotations.PlanConfigMapName("lb-c-u1"), metav1.GetOptions{}); err == nil {
		t.Error("ConfigMap still there after unpublish")
	}
}

// TestApprovalNoticedByThePlanInformer: an approval set on a plan ConfigMap
// of tfccm's namespace is acted on as soon as the informer delivers it,
// without any sync of the Service; the accepted approval is told to the
// LoadBalancer facet (which syncs the Service once the plan is applied).
// A ConfigMap of the same name in another namespace is not watched.
func TestApprovalNoticedByThePlanInformer(t *testing.T) {
	var mu sync.Mutex
	var approved, told []string
	rv := newReviewer(lockedApprover{&mu, &approved}, fakeRenderer{}, func(runtime.Object, string, string, string) {}, "tfccm")
	svc := phaseService()
	rv.setOwners(func(ws string) (*corev1.Service, bool) {
		if ws == "lb-c-u1" {
			return svc, false
		}
		return nil, false
	}, func(ws string) { mu.Lock(); told = append(told, ws); mu.Unlock() }, nil)
	labels := map[string]string{annotations.PlanKind: annotations.PlanOfLoadBalancer}
	client := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tfccm", Name: annotations.PlanConfigMapName("lb-c-u1"), Labels: labels}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: annotations.PlanConfigMapName("lb-c-u1"), Labels: labels}})
	rv.setClient(client)
	rv.watchPlans(t.Context())
	hash := strings.Repeat("a", 64)
	for _, ns := range []string{"ns", "tfccm"} {
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, annotations.ApprovedPlan.Name, hash)
		if _, err := client.CoreV1().ConfigMaps(ns).Patch(t.Context(), annotations.PlanConfigMapName("lb-c-u1"), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got, gotTold := slices.Clone(approved), slices.Clone(told)
		mu.Unlock()
		// The approval is told to the facet right after the engine takes it.
		if len(got) > 0 && (len(gotTold) > 0 || time.Now().After(deadline)) {
			if !slices.Equal(got, []string{"lb-c-u1=" + hash}) || !slices.Equal(gotTold, []string{"lb-c-u1"}) {
				t.Fatalf("approved %v, told %v; want one approval of lb-c-u1", got, gotTold)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the approval on tfccm's ConfigMap was not noticed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockedApprover records approvals made from informer goroutines.
type lockedApprover struct {
	mu       *sync.Mutex
	approved *[]string
}

func (a lockedApprover) Approve(ws, hash string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	*a.approved = append(*a.approved, ws+"="+hash)
	return nil
}
func (a lockedApprover) Status(string) workspace.Status { return workspace.Status{} }
