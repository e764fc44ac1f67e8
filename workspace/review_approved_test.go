package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tfccm/tfccm/workspace/plans"
)

// TestReviewPolicyApproves: in review mode, a plan the gate approves
// (GateVerdict.Approved: an approve policy rule) is applied without an
// approval and nothing is published or kept; one it does not approve
// waits; and the gate's require-approval still holds an approved one.
func TestReviewPolicyApproves(t *testing.T) {
	stateDir := t.TempDir()
	var verdict plans.GateVerdict
	var seen []bool // backends_only as the gate saw it
	gate := func(in plans.GateInput) plans.GateVerdict {
		only, _ := in.Plan[plans.BackendsOnlyKey].(bool)
		seen = append(seen, only)
		return verdict
	}
	store := &memPlans{}
	e, stop := stoppableEngine(t, Options{WorkDir: t.TempDir(), Review: true, Plans: store, Gate: gate})
	defer stop()

	verdict = plans.GateVerdict{Approved: "policy backends"}
	waitApplied(t, e, applyNow(t, e, restartSpec(stateDir, 1)))
	if b, _ := os.ReadFile(filepath.Join(stateDir, "applied.log")); string(b) != "1\n" {
		t.Fatalf("applied.log %q: want the approved plan applied", b)
	}
	if store.get(t, "rv") != nil {
		t.Error("a plan the policy approved was kept for approval")
	}
	if len(seen) != 1 || seen[0] {
		t.Errorf("backends_only seen %v: want false (the module has no %s)", seen, plans.BackendsFile)
	}

	verdict = plans.GateVerdict{}
	spec := restartSpec(stateDir, 2)
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	awaitPlan(t, e, spec)

	verdict = plans.GateVerdict{Approved: "policy backends", Approval: "policy big: requires approval"}
	spec = restartSpec(stateDir, 3)
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	awaitPlan(t, e, spec)
	if b, _ := os.ReadFile(filepath.Join(stateDir, "applied.log")); string(b) != "1\n" {
		t.Fatalf("applied.log %q: a plan waiting for approval was applied", b)
	}
}
