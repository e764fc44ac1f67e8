package lbcontroller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// TestConditionsAreAppliedOnChange: tfccm's conditions reach the Service's
// status by server-side apply with tfccm's field manager, carry the
// Service's generation, keep their transition time while their status
// holds, and an unchanged set is not written again.
func TestConditionsAreAppliedOnChange(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1", Generation: 3}}
	client := fake.NewClientset(svc.DeepCopy())
	writes := 0
	client.PrependReactor("patch", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if a.GetSubresource() == "status" {
			writes++
			if p.GetPatchType() != "application/apply-patch+yaml" {
				t.Errorf("patch type %s, want server-side apply", p.GetPatchType())
			}
		}
		return false, nil, nil
	})
	c := newConditions()
	c.setClient(client)
	get := func(typ string) metav1.Condition {
		t.Helper()
		s, err := client.CoreV1().Services("ns").Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cond := range s.Status.Conditions {
			if cond.Type == typ {
				return cond
			}
		}
		t.Fatalf("no condition %s in %+v", typ, s.Status.Conditions)
		return metav1.Condition{}
	}

	c.set(svc, statusConditions(workspace.Status{Phase: workspace.PhaseRunning})...)
	applying := get(ConditionProgrammed)
	if applying.Status != metav1.ConditionFalse || applying.Reason != CondReasonApplying || applying.ObservedGeneration != 3 {
		t.Fatalf("Programmed %+v, want False Applying at generation 3", applying)
	}
	c.set(svc, statusConditions(workspace.Status{Phase: workspace.PhaseRunning})...)
	if writes != 1 {
		t.Errorf("%d writes after the same conditions twice, want 1", writes)
	}
	c.set(svc, resultConditions(workspace.Result{Op: "apply", Err: &tofu.Error{Op: "apply", Summary: "boom"}})...)
	failed := get(ConditionProgrammed)
	if failed.Reason != CondReasonApplyFailed || !failed.LastTransitionTime.Equal(&applying.LastTransitionTime) {
		t.Errorf("Programmed %+v: want ApplyFailed with the transition time kept (%s)", failed, applying.LastTransitionTime)
	}
	c.set(svc, resultConditions(workspace.Result{Op: "apply", Changed: true})...)
	if p, a := get(ConditionProgrammed), get(ConditionAccepted); p.Status != metav1.ConditionTrue || p.Reason != CondReasonApplied || a.Status != metav1.ConditionTrue {
		t.Errorf("after the apply: Programmed %+v, Accepted %+v", p, a)
	}
	c.set(svc, resultConditions(workspace.Result{Op: "plan", Err: &tofu.Error{Op: "plan", Summary: "port 53/UDP unsupported", Invalid: true}})...)
	if a := get(ConditionAccepted); a.Status != metav1.ConditionFalse || a.Reason != CondReasonInvalidInput || a.Message != "plan: port 53/UDP unsupported" {
		t.Errorf("Accepted %+v, want False InvalidInput naming the port", a)
	}
	if writes != 4 {
		t.Errorf("%d writes, want 4", writes)
	}
}

// TestStalePlanCondition: an approval refused because the state changed
// since the plan was made is Programmed=False PlanStale, saying why.
func TestStalePlanCondition(t *testing.T) {
	err := &tofu.Error{Op: "apply", Summary: "plan abc was made against lineage l serial 3, the state is now lineage l serial 4"}
	conds := resultConditions(workspace.Result{Op: "apply", Err: fmt.Errorf("%w: %w", err, plans.ErrStateChanged)})
	var got *metav1.Condition
	for i := range conds {
		if conds[i].Type == ConditionProgrammed {
			got = &conds[i]
		}
	}
	if got == nil || got.Status != metav1.ConditionFalse || got.Reason != CondReasonPlanStale || !strings.Contains(got.Message, "serial 4") {
		t.Fatalf("conditions %+v: want Programmed False PlanStale naming the states", conds)
	}
}
