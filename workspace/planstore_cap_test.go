package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/workspace/plans"
)

// tooLargePlans is a plan store whose every plan is over its cap.
type tooLargePlans struct{ memPlans }

func (s *tooLargePlans) SavePlan(_ context.Context, name string, _ *plans.Saved) error {
	return &plans.TooLargeError{Where: "Secret tfccm/tfccm-plan-" + name, Size: 2_000_000, Cap: plans.MaxSealedPlan}
}

// TestReviewPlanTooLargeToKeep: a plan the store will not keep (over its
// size cap) fails the pass with the store's words (size, cap, where): no
// plan is pending or published, and nothing is applied.
func TestReviewPlanTooLargeToKeep(t *testing.T) {
	stateDir := t.TempDir()
	results := make(chan Result, 8)
	e, stop := stoppableEngine(t, Options{WorkDir: t.TempDir(), Review: true, Plans: &tooLargePlans{},
		OnResult: func(_ string, r Result) { results <- r }})
	defer stop()
	if _, err := e.Apply(restartSpec(stateDir, 1)); err != nil {
		t.Fatal(err)
	}
	r := waitResult(t, results, func(Result) bool { return true })
	if r.Err == nil || r.AwaitingApproval || r.Plan != nil {
		t.Fatalf("result %+v: want a failed plan, none pending", r)
	}
	for _, want := range []string{"is 2000000 bytes", "over the cap of 921600 bytes", "Secret tfccm/tfccm-plan-rv", "stays as it was"} {
		if !strings.Contains(r.Err.Error(), want) {
			t.Errorf("error %q does not say %q", r.Err, want)
		}
	}
	if st := e.Status("rv"); st.Phase != PhaseFailed || st.Plan != nil {
		t.Errorf("status %+v: want failed with no plan", st)
	}
	if _, err := os.Stat(filepath.Join(stateDir, "applied.log")); !os.IsNotExist(err) {
		t.Errorf("something was applied (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(e.Dir("rv"), planJSONFile)); !os.IsNotExist(err) {
		t.Errorf("the plan stays published in the work dir (%v)", err)
	}
}
