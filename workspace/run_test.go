package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// A plan whose command exits 2 ("changes", and how a crashed Go program
// exits: tofu, or the job runner's stand-in) without saving the plan
// fails the pass at plan, saying so: no apply runs without its saved plan
// (it failed with `Failed to load ".tfccm/plan.tfplan" as a plan file`).
// The retry plans again and applies. (A first apply plans itself: the
// crash comes with the change after it.)
func TestPlanWithoutSavedPlanIsNotApplied(t *testing.T) {
	dir := t.TempDir()
	calls, crashed := filepath.Join(dir, "calls.log"), filepath.Join(dir, "crashed")
	script := fmt.Sprintf("#!/bin/sh\necho \"$1\" >> '%s'\nif [ \"$1\" = plan ] && [ ! -e '%s' ]; then touch '%s'; exit 2; fi\nexec '%s' \"$@\"\n",
		calls, crashed, crashed, repo.Tofu(t))
	bin := filepath.Join(dir, "tofu-crashing")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var results []Result
	e := newTestEngine(t, Options{
		Binary:  bin,
		Backoff: Backoff{Initial: 100 * time.Millisecond, Max: 200 * time.Millisecond},
		OnResult: func(_ string, r Result) {
			mu.Lock()
			defer mu.Unlock()
			results = append(results, r)
		},
	})
	if _, err := e.Apply(testSpec("crashed-plan", 1, 0)); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, testSpec("crashed-plan", 1, 0))
	spec := testSpec("crashed-plan", 2, 0)
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitRetryApplied(t, e, spec.Name)
	mu.Lock()
	defer mu.Unlock()
	if len(results) < 3 {
		t.Fatalf("results %+v; want the first apply, a failed pass, then an applied one", results)
	}
	first := results[1]
	if first.Err == nil || first.Op != "plan" || !strings.Contains(first.Err.Error(), "saved no plan") {
		t.Errorf("first pass: op %q, err %v; want the plan failed for want of its saved plan", first.Op, first.Err)
	}
	for _, r := range results {
		if r.Err != nil && strings.Contains(r.Err.Error(), "as a plan file") {
			t.Errorf("an apply ran without its saved plan: %v", r.Err)
		}
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, c := range strings.Fields(string(b)) {
		if c == "plan" || c == "apply" {
			cmds = append(cmds, c)
		}
	}
	if got := strings.Join(cmds, " "); got != "apply plan plan apply" {
		t.Errorf("plan and apply commands: %q, want \"apply plan plan apply\" (no apply after the plan that saved nothing)", got)
	}
}

// A first apply (which plans itself) that fails while planning for any
// reason but rejected inputs is the apply's failure and is retried: a
// runner killed before its output came back may have applied already.
func TestFirstApplyFailureIsTheApplys(t *testing.T) {
	dir := t.TempDir()
	failed := filepath.Join(dir, "failed")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = apply ] && [ ! -e '%s' ]; then touch '%s'; echo 'Error: the runner of this command ended without a result' >&2; exit 1; fi\nexec '%s' \"$@\"\n",
		failed, failed, repo.Tofu(t))
	bin := filepath.Join(dir, "tofu-failing")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var results []Result
	e := newTestEngine(t, Options{
		Binary:  bin,
		Backoff: Backoff{Initial: 100 * time.Millisecond, Max: 200 * time.Millisecond},
		OnResult: func(_ string, r Result) {
			mu.Lock()
			defer mu.Unlock()
			results = append(results, r)
		},
	})
	spec := testSpec("first-failed", 1, 0)
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitRetryApplied(t, e, spec.Name)
	mu.Lock()
	defer mu.Unlock()
	if len(results) < 2 {
		t.Fatalf("results %+v; want a failed pass, then an applied one", results)
	}
	if r := results[0]; r.Err == nil || r.Op != "apply" || tofu.IsInvalidInput(r.Err) || !strings.HasPrefix(r.Err.Error(), "apply: ") {
		t.Errorf("first pass: op %q, err %v; want the apply failed (not invalid input)", r.Op, r.Err)
	}
}

// waitRetryApplied waits until workspace name is applied after failed
// passes (waitApplied ends at the first failure).
func waitRetryApplied(t *testing.T, e *Engine, name string) {
	t.Helper()
	testkit.Eventually(t, 2*time.Minute, "the retry applies", func(context.Context) error {
		if st := e.Status(name); st.Phase != PhaseApplied {
			return fmt.Errorf("phase %s, err %v", st.Phase, st.Err)
		}
		return nil
	})
}
