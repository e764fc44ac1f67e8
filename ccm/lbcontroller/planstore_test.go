package lbcontroller

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/internal/seal"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace/plans"
)

// TestPlanSecrets: a kept plan is sealed in a Secret in tfccm's namespace
// (never the Service's), labelled with its Service and owned by nothing
// (owner references cannot cross namespaces); it opens again with the key
// tfccm created once there, and is not the plan of another Service or of
// a Secret moved or altered.
func TestPlanSecrets(t *testing.T) {
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"}}
	owners := map[string]*corev1.Service{"lb-a": svc}
	owner := func(ws string) (*corev1.Service, bool) { return owners[ws], false }
	client := fake.NewClientset()
	store := newPlanSecrets("tfccm", owner)
	if err := store.SavePlan(ctx, "lb-a", &plans.Saved{}); err == nil {
		t.Fatal("saved without a cluster client")
	}
	store.setClient(client)

	plan := &plans.Saved{Plan: plans.PendingPlan{Hash: "h1", SpecHash: "s1", Text: "token = hush-1"}, File: []byte("PK\x03\x04 hush-1")}
	if err := store.SavePlan(ctx, "lb-a", plan); err != nil {
		t.Fatal(err)
	}
	if list, _ := client.CoreV1().Secrets("shop").List(ctx, metav1.ListOptions{}); len(list.Items) != 0 {
		t.Fatalf("%d Secrets in the Service's namespace, want none", len(list.Items))
	}
	sec, err := client.CoreV1().Secrets("tfccm").Get(ctx, "tfccm-plan-lb-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o := sec.OwnerReferences; len(o) != 0 {
		t.Errorf("owners %+v, want none", o)
	}
	wantLabels := map[string]string{annotations.PlanServiceUID: "uid-1", annotations.PlanServiceNamespace: "shop", annotations.PlanServiceName: "web",
		annotations.PlanKind: annotations.PlanOfLoadBalancer, annotations.ManagedBy: "tfccm"}
	if sec.Annotations[annotations.PlanHash] != "h1" || !maps.Equal(sec.Labels, wantLabels) {
		t.Errorf("annotations %v, labels %v", sec.Annotations, sec.Labels)
	}
	if bytes.Contains(sec.Data[planSecretKey], []byte("hush-1")) {
		t.Fatal("the plan Secret holds the plan in clear")
	}
	got, err := store.LoadPlan(ctx, "lb-a")
	if err != nil || got == nil || got.Plan.Hash != "h1" || !bytes.Equal(got.File, plan.File) || got.Plan.Text != plan.Plan.Text {
		t.Fatalf("LoadPlan = %+v, %v", got, err)
	}

	// Replaced by the next plan; the key is made once.
	plan.Plan.Hash = "h2"
	if err := store.SavePlan(ctx, "lb-a", plan); err != nil {
		t.Fatal(err)
	}
	if got, err := store.LoadPlan(ctx, "lb-a"); err != nil || got.Plan.Hash != "h2" {
		t.Fatalf("after a new plan: %+v, %v", got, err)
	}
	keys, _ := client.CoreV1().Secrets("tfccm").Get(ctx, annotations.PlanKeySecret, metav1.GetOptions{})
	if keys == nil || len(keys.Data[planKeyDataKey]) != seal.KeySize {
		t.Fatalf("key Secret %+v", keys)
	}
	// A new process (a restart) reads the same key.
	restarted := newPlanSecrets("tfccm", owner)
	restarted.setClient(client)
	if got, err := restarted.LoadPlan(ctx, "lb-a"); err != nil || got == nil || got.Plan.Hash != "h2" {
		t.Fatalf("after a restart: %+v, %v", got, err)
	}

	// The routes plan lives there too.
	if err := store.SavePlan(ctx, templates.RoutesWorkspaceName, plan); err != nil {
		t.Fatal(err)
	}
	if r, err := client.CoreV1().Secrets("tfccm").Get(ctx, annotations.PlanConfigMapName(templates.RoutesWorkspaceName), metav1.GetOptions{}); err != nil || r.Labels[annotations.PlanKind] != annotations.PlanOfRoutes {
		t.Fatalf("routes plan Secret %+v, %v", r, err)
	}

	// Another Service with the same workspace's Secret: not its plan.
	owners["lb-a"] = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-2"}}
	if got, err := store.LoadPlan(ctx, "lb-a"); err != nil || got != nil {
		t.Errorf("other Service: %+v, %v; want none", got, err)
	}
	owners["lb-a"] = svc

	// A sealed plan copied to another workspace's Secret does not open.
	copied := sec.DeepCopy()
	copied.Name, copied.ResourceVersion = "tfccm-plan-lb-b", ""
	if _, err := client.CoreV1().Secrets("tfccm").Create(ctx, copied, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owners["lb-b"] = svc
	if _, err := store.LoadPlan(ctx, "lb-b"); !errors.Is(err, seal.ErrOpen) {
		t.Errorf("copied plan: %v, want seal.ErrOpen", err)
	}

	// Deleted also once the Service is forgotten (after its destroy).
	delete(owners, "lb-a")
	if err := store.DeletePlan(ctx, "lb-a"); err != nil {
		t.Fatal(err)
	}
	owners["lb-a"] = svc
	if got, err := store.LoadPlan(ctx, "lb-a"); err != nil || got != nil {
		t.Errorf("after delete: %+v, %v", got, err)
	}
	if err := store.DeletePlan(ctx, "lb-a"); err != nil {
		t.Errorf("deleting twice: %v", err)
	}
	if got, err := store.LoadPlan(ctx, "lb-unknown"); err != nil || got != nil {
		t.Errorf("a workspace without a known Service: %+v, %v; want none", got, err)
	}
	if err := store.SavePlan(ctx, "lb-unknown", plan); err == nil {
		t.Error("a plan of a workspace without a known Service was kept")
	}
}

// TestPlanSecretOfOrphan: the plan of an orphan (its Service gone, found
// by the sweep in the state backend) is kept in tfccm's namespace with the
// gone Service's UID; a controller that never kept it (outside review
// mode) deletes it once it destroyed the orphan.
func TestPlanSecretOfOrphan(t *testing.T) {
	ctx := context.Background()
	gone := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-gone"}}
	client := fake.NewClientset()
	orphan := func(ws string) (*corev1.Service, bool) { return gone, true }
	reviewer := newPlanSecrets("tfccm", orphan)
	reviewer.setClient(client)
	if err := reviewer.SavePlan(ctx, "lb-o", &plans.Saved{Plan: plans.PendingPlan{Hash: "h1", Destroy: true}}); err != nil {
		t.Fatal(err)
	}
	sec, err := client.CoreV1().Secrets("tfccm").Get(ctx, "tfccm-plan-lb-o", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sec.OwnerReferences) != 0 || sec.Labels[annotations.PlanServiceUID] != "uid-gone" {
		t.Errorf("orphan's plan Secret: owners %+v, labels %v; want no owner and the gone Service's UID", sec.OwnerReferences, sec.Labels)
	}
	// A restarted controller in review mode takes it back.
	if got, err := newPlanSecretsWith(client, orphan).LoadPlan(ctx, "lb-o"); err != nil || got == nil || got.Plan.Hash != "h1" {
		t.Fatalf("after a restart: %+v, %v", got, err)
	}
	// Another controller destroys the orphan and deletes its plan.
	if err := newPlanSecretsWith(client, orphan).DeletePlan(ctx, "lb-o"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets("tfccm").Get(ctx, "tfccm-plan-lb-o", metav1.GetOptions{}); err == nil {
		t.Error("the orphan's plan Secret is still there")
	}
}

func newPlanSecretsWith(client *fake.Clientset, owner func(string) (*corev1.Service, bool)) *planSecrets {
	s := newPlanSecrets("tfccm", owner)
	s.setClient(client)
	return s
}

// TestDeletePlanWithoutRights: a controller that publishes no plans (no
// review mode, no policy or change window) has no rights to plan Secrets
// in the chart's RBAC; deleting a destroyed workspace's kept plan is then
// no error. One that publishes them reports the refusal.
func TestDeletePlanWithoutRights(t *testing.T) {
	for _, publishing := range []bool{false, true} {
		client := fake.NewClientset()
		client.PrependReactor("delete", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "tfccm-plan-lb-x", errors.New("RBAC"))
		})
		s := newPlanSecrets("tfccm", func(string) (*corev1.Service, bool) { return nil, true })
		s.publishing = publishing
		s.setClient(client)
		err := s.DeletePlan(context.Background(), "lb-x")
		if publishing != (err != nil) {
			t.Errorf("publishing %v: DeletePlan refused by RBAC = %v", publishing, err)
		}
	}
}
