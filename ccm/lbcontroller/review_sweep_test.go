package lbcontroller

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tfccm/tfccm/annotations"
)

// TestSweepPlans: the plans (ConfigMap and Secret) in tfccm's namespace
// whose Service UID no longer exists are deleted, unless tfccm is working
// on their workspace (an orphan's destroy) or they are younger than
// orphanMinAge; the routes plan and anything outside tfccm's namespace are
// never touched. Secrets are never listed: each goes with its ConfigMap.
func TestSweepPlans(t *testing.T) {
	now := time.Now()
	old := metav1.NewTime(now.Add(-time.Hour))
	young := metav1.NewTime(now.Add(-time.Second))
	meta := func(ns, ws, uid string, created metav1.Time) metav1.ObjectMeta {
		kind := annotations.PlanOfLoadBalancer
		if uid == "" {
			kind = annotations.PlanOfRoutes
		}
		return metav1.ObjectMeta{Namespace: ns, Name: annotations.PlanConfigMapName(ws), CreationTimestamp: created,
			Labels: map[string]string{annotations.PlanKind: kind, annotations.PlanServiceUID: uid}}
	}
	var objs []runtime.Object
	for _, m := range []metav1.ObjectMeta{
		meta("tfccm", "lb-live", "live", old),
		meta("tfccm", "lb-gone", "gone", old),
		meta("tfccm", "lb-orphan", "orphan", old),
		meta("tfccm", "lb-young", "young", young),
		meta("tfccm", "routes", "", old),
		meta("shop", "lb-gone", "gone", old),
	} {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: m}, &corev1.Secret{ObjectMeta: m})
	}
	client := fake.NewClientset(objs...)
	rv := newReviewer(approveEngine{}, fakeRenderer{}, func(runtime.Object, string, string, string) {}, "tfccm")
	rv.setClient(client)
	again := &sweepAgain{now: now}
	n, err := rv.sweepPlans(t.Context(), again, map[types.UID]bool{"live": true}, func(ws string) bool { return ws == "lb-orphan" })
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("deleted %d, want 1 (the gone Service's plan: its ConfigMap and Secret)", n)
	}
	// tfccm reads only the Secrets it names (its RBAC has no list).
	for _, a := range client.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "secrets" {
			t.Errorf("the sweep listed Secrets in %s", a.GetNamespace())
		}
	}
	if again.wait <= 0 || again.wait > orphanMinAge {
		t.Errorf("sweep again in %v, want within %v for the young plan", again.wait, orphanMinAge)
	}
	names := func(ns string) []string {
		var out []string
		cms, _ := client.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
		for _, c := range cms.Items {
			out = append(out, "cm/"+c.Name)
		}
		secs, _ := client.CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{})
		for _, s := range secs.Items {
			out = append(out, "secret/"+s.Name)
		}
		slices.Sort(out)
		return out
	}
	want := []string{"cm/tfccm-plan-lb-live", "cm/tfccm-plan-lb-orphan", "cm/tfccm-plan-lb-young", "cm/tfccm-plan-routes",
		"secret/tfccm-plan-lb-live", "secret/tfccm-plan-lb-orphan", "secret/tfccm-plan-lb-young", "secret/tfccm-plan-routes"}
	if got := names("tfccm"); !slices.Equal(got, want) {
		t.Errorf("left in tfccm: %v, want %v", got, want)
	}
	if got := names("shop"); len(got) != 2 {
		t.Errorf("left in shop: %v, want both untouched", got)
	}
}
