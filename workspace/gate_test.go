package workspace

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/workspace/plans"
)

// testGate is a Gate whose answer the test sets; it records what it saw.
type testGate struct {
	mu      sync.Mutex
	verdict func(plans.GateInput) plans.GateVerdict
	seen    []plans.GateInput
}

func (g *testGate) judge(in plans.GateInput) plans.GateVerdict {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seen = append(g.seen, in)
	return g.verdict(in)
}

func (g *testGate) set(f func(plans.GateInput) plans.GateVerdict) {
	g.mu.Lock()
	g.verdict = f
	g.mu.Unlock()
}

func (g *testGate) last() plans.GateInput {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seen[len(g.seen)-1]
}

func waitHash(t *testing.T, e *Engine, spec Spec) (Status, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return e.Wait(ctx, spec.Name, spec.Hash)
}

// TestGateDeniesWarnsAndRequiresApproval: a denied plan is not applied
// and not retried, and the error names the rule; a warning is applied
// with the warning in the result; a plan a rule holds for approval is
// applied once approved, without review mode; the gate sees the redacted
// plan and whether the pass creates.
func TestGateDeniesWarnsAndRequiresApproval(t *testing.T) {
	work := t.TempDir()
	gate := &testGate{}
	var mu sync.Mutex
	var results []Result
	e := newTestEngine(t, Options{WorkDir: work, Gate: gate.judge, OnResult: func(_ string, r Result) {
		mu.Lock()
		results = append(results, r)
		mu.Unlock()
	}})

	gate.set(func(plans.GateInput) plans.GateVerdict {
		return plans.GateVerdict{Denied: "policy no-creates: creates 1 resource"}
	})
	spec := reviewSpec(1)
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	st, err := waitHash(t, e, spec)
	if !IsDenied(err) || st.Phase != PhaseFailed || !st.NextRetry.IsZero() {
		t.Fatalf("denied plan: status %+v, err %v", st, err)
	}
	if got := applyLog(t, work); got != "" {
		t.Fatalf("a denied plan was applied: %q", got)
	}
	in := gate.last()
	rcs, _ := in.Plan["resource_changes"].([]any)
	if !in.Create || in.Destroy || len(rcs) != 1 {
		t.Fatalf("gate input %+v", in)
	}
	change := rcs[0].(map[string]any)["change"].(map[string]any)
	after := change["after"].(map[string]any)["input"].(map[string]any)
	if after["token"] == "tok-1-zzsecret" || after["n"] != float64(1) {
		t.Errorf("the gate saw %v: want n and the token redacted", after)
	}

	gate.set(func(plans.GateInput) plans.GateVerdict {
		return plans.GateVerdict{Warnings: []string{"policy big: careful"}}
	})
	spec2 := reviewSpec(2)
	if _, err := e.Apply(spec2); err != nil {
		t.Fatal(err)
	}
	if _, err := waitHash(t, e, spec2); err != nil {
		t.Fatalf("warned plan: %v", err)
	}
	testkit.Eventually(t, 30*time.Second, "the warning in the result", func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range results {
			if r.Hash == spec2.Hash && r.Changed && len(r.Verdict.Warnings) == 1 {
				return nil
			}
		}
		return errors.New("no applied result with the warning")
	})

	gate.set(func(plans.GateInput) plans.GateVerdict {
		return plans.GateVerdict{Approval: "policy replace-needs-approval"}
	})
	spec3 := reviewSpec(3)
	if _, err := e.Apply(spec3); err != nil {
		t.Fatal(err)
	}
	p := awaitPlan(t, e, spec3)
	if st := e.Status("rv"); st.Verdict.Approval == "" {
		t.Errorf("status %+v lacks why it waits", st)
	}
	if err := e.Approve("rv", p.Hash); err != nil {
		t.Fatal(err)
	}
	st, err = waitHash(t, e, spec3)
	if err != nil || string(st.Outputs["n"]) != "3" {
		t.Fatalf("approved plan: %v, outputs %s", err, st.Outputs["n"])
	}
}

// TestGateHoldsUntilTheWindowOpens: a plan held by a closed window is
// published, not applied, and applied once the window opens without
// anyone asking; a destroy goes through the gate too.
func TestGateHoldsUntilTheWindowOpens(t *testing.T) {
	work := t.TempDir()
	gate := &testGate{}
	e := newTestEngine(t, Options{WorkDir: work, Gate: gate.judge})
	opens := time.Now().Add(3 * time.Second)
	gate.set(func(plans.GateInput) plans.GateVerdict {
		if time.Now().Before(opens) {
			return plans.GateVerdict{Hold: "change window closed", HoldUntil: opens}
		}
		return plans.GateVerdict{}
	})
	spec := reviewSpec(1)
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	awaitPlan(t, e, spec)
	if st := e.Status("rv"); st.Verdict.Hold == "" || !st.Verdict.HoldUntil.Equal(opens) {
		t.Fatalf("status %+v: want the hold and its end", st)
	}
	if got := applyLog(t, work); got != "" {
		t.Fatalf("applied in a closed window: %q", got)
	}
	testkit.Eventually(t, time.Minute, "the held plan applied after the window opened", func(context.Context) error {
		if st := e.Status("rv"); st.AppliedHash != spec.Hash {
			return errors.New(string(st.Phase))
		}
		return nil
	})
	if time.Now().Before(opens) {
		t.Fatal("applied before the window opened")
	}

	gate.set(func(in plans.GateInput) plans.GateVerdict {
		if in.Destroy {
			return plans.GateVerdict{Denied: "policy keep: no destroys"}
		}
		return plans.GateVerdict{}
	})
	if _, err := e.Destroy(spec); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, time.Minute, "the destroy denied", func(context.Context) error {
		if st := e.Status("rv"); st.Phase != PhaseFailed || !IsDenied(st.Err) {
			return errors.New(string(st.Phase))
		}
		return nil
	})
	if !gate.last().Destroy {
		t.Error("the gate did not see a destroy")
	}
}
