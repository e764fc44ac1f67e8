package workspace

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
)

// stateRm removes addr from the state of the workspace in dir, as a
// resource deleted behind tofu's back looks after a refresh.
func stateRm(t *testing.T, dir, addr string) {
	t.Helper()
	rm := exec.Command(repo.Tofu(t), "state", "rm", addr)
	rm.Dir = dir
	rm.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE=/dev/null")
	if out, err := rm.CombinedOutput(); err != nil {
		t.Fatalf("state rm: %v\n%s", err, out)
	}
}

// TestReconcileRepairsDrift: a resource removed behind tofu's back (here
// from the state, as `tofu state rm` or a console deletion seen by refresh
// would) is recreated by Reconcile, and an undrifted workspace re-plans
// without applying.
func TestReconcileRepairsDrift(t *testing.T) {
	bin, calls := countingBinary(t)
	var mu sync.Mutex
	var results []Result
	e := newTestEngine(t, Options{Binary: bin, OnResult: func(_ string, r Result) {
		mu.Lock()
		results = append(results, r)
		mu.Unlock()
	}})
	spec := testSpec("drift", 1, 0)
	spec.Hash = spec.ContentHash()
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, spec)
	last := func() Result {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			mu.Lock()
			n := len(results)
			var r Result
			if n > 0 {
				r = results[n-1]
			}
			mu.Unlock()
			if r.Drift {
				return r
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("no reconcile result")
		return Result{}
	}

	// No drift: plan only.
	applies := count(calls(), "apply")
	e.Reconcile("drift")
	if r := last(); r.Changed || r.Err != nil {
		t.Fatalf("undrifted reconcile: %+v", r)
	}
	if got := count(calls(), "apply"); got != applies {
		t.Errorf("undrifted reconcile applied (%d -> %d)", applies, got)
	}

	// Drift: the resource disappears from the state.
	mu.Lock()
	results = nil
	mu.Unlock()
	stateRm(t, e.Dir("drift"), "terraform_data.b")
	e.Reconcile("drift")
	if r := last(); !r.Changed || r.Err != nil {
		t.Fatalf("drift not repaired: %+v", r)
	}
	list := exec.Command(repo.Tofu(t), "state", "list")
	list.Dir = e.Dir("drift")
	list.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE=/dev/null")
	out, err := list.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "terraform_data.b") {
		t.Fatalf("terraform_data.b not recreated: %v\n%s", err, out)
	}
	if st := e.Status("drift"); st.Phase != PhaseApplied || st.AppliedHash != spec.Hash {
		t.Errorf("status after reconcile: %+v", st)
	}
	// A workspace the engine was never given is ignored.
	e.Reconcile("unknown")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	<-ctx.Done()
}
