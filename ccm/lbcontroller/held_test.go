package lbcontroller

import (
	"context"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// TestGateDeniedResult: a plan the policy denies is a TerraformPlanDenied
// Event naming the rule and Programmed=False PolicyDenied; a policy
// warning is an Event of its own (moved from ccm's TestGatePolicy).
func TestGateDeniedResult(t *testing.T) {
	eng := &fakeLBEngine{status: workspace.Status{Phase: workspace.PhaseRunning}}
	l, events := newPhaseTest(eng, fakeRenderer{})
	if _, err := l.EnsureLoadBalancer(context.Background(), "c", phaseService(), nil); err == nil {
		t.Fatal("in-flight Ensure returned no error")
	}
	denied := workspace.Result{Op: "plan", Err: &tofu.Error{Op: "plan", Summary: "policy at-most-2-destroys: destroys 3 resources", Denied: true}}
	l.onResult("lb-c-u1", denied)
	l.onResult("lb-c-u1", workspace.Result{Op: "apply", Changed: true, Verdict: plans.GateVerdict{Warnings: []string{"policy destroys-warn: careful"}}})
	if got := reasons(*events); got != ReasonPlanDenied+","+ReasonPolicyWarning+","+ReasonApplied {
		t.Fatalf("events %q", got)
	}
	if m := (*events)[0].message; !strings.Contains(m, "at-most-2-destroys") {
		t.Errorf("denied Event %q does not name the rule", m)
	}
	conds := resultConditions(denied)
	if len(conds) != 2 || conds[1].Type != ConditionProgrammed || conds[1].Reason != CondReasonPolicyDenied || !strings.Contains(conds[1].Message, "at-most-2-destroys") {
		t.Errorf("conditions %+v", conds)
	}
}

// TestGateHeldResult: a held result is published as
// TerraformChangeWindowClosed with Programmed=False ChangeWindowClosed
// (moved from ccm's TestGateChangeWindows).
func TestGateHeldResult(t *testing.T) {
	eng := &fakeLBEngine{status: workspace.Status{Phase: workspace.PhaseRunning}}
	l, events := newPhaseTest(eng, fakeRenderer{})
	if _, err := l.EnsureLoadBalancer(context.Background(), "c", phaseService(), nil); err == nil {
		t.Fatal("in-flight Ensure returned no error")
	}
	plan := &plans.PendingPlan{Hash: strings.Repeat("ab", 32), Change: 1}
	held := workspace.Result{Op: "plan", AwaitingApproval: true, Plan: plan, Verdict: plans.GateVerdict{Hold: "not applied: no allow change window is open (nights); next window opens at 2026-11-25T22:00:00Z"}}
	if !l.onResult("lb-c-u1", held) {
		t.Fatal("held result not claimed")
	}
	if got := reasons(*events); got != ReasonChangeWindowClosed {
		t.Fatalf("events %q", got)
	}
	if m := (*events)[0].message; !strings.Contains(m, "next window opens at 2026-11-25T22:00:00Z") || !strings.Contains(m, plan.Hash) {
		t.Errorf("Event %q", m)
	}
	st := workspace.Status{Phase: workspace.PhaseAwaitingApproval, Hash: "h", Plan: plan, Verdict: held.Verdict}
	conds := statusConditions(st)
	if len(conds) != 2 || conds[1].Reason != CondReasonChangeWindowClosed || !strings.Contains(conds[1].Message, "next window opens at") {
		t.Errorf("conditions %+v", conds)
	}
}
