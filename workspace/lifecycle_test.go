package workspace

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// The lifecycle's transition table (lifecycle.go), row by row: each row is
// driven through the function that implements it (accept, queueWork,
// decide, settle, Approve, Reconcile, restorePlan) on an engine whose
// workers never start, and a row without a case fails the test.

// lifecycleRows are the rows of lifecycle.go's table, each named "from /
// on" (its first two columns).
func lifecycleRows(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("lifecycle.go")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	var on, to int // where the on and to columns start (the header's words)
	for _, raw := range strings.Split(string(src), "\n") {
		line, ok := strings.CutPrefix(raw, "//\t")
		switch {
		case ok && strings.HasPrefix(line, "from "):
			on, to = strings.Index(line, " on ")+1, strings.Index(line, " to")+1
		case on == 0:
			// before the table
		case !ok:
			return rows // the table's comment ended
		case strings.HasPrefix(line, " "):
			// a row's continuation line
		case len(line) <= to:
			t.Fatalf("lifecycle.go: table row %q has no to column", line)
		default:
			rows = append(rows, strings.TrimSpace(line[:on])+" / "+strings.TrimSpace(line[on:to]))
		}
	}
	return rows
}

// rowEngine is an engine that is never started, and the entry of
// workspace "ws" in it.
func rowEngine(t *testing.T, opts Options) (*Engine, *entry) {
	t.Helper()
	opts.Binary, opts.WorkDir = "/bin/true", t.TempDir()
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Take what a row queued, so that the queue's depth metric (shared
		// by every engine of the process) is back where it was.
		for e.queue.Len() > 0 {
			name, _ := e.queue.Get()
			e.queue.Done(name)
		}
		e.queue.ShutDown()
	})
	return e, e.entry("ws")
}

func rowSpec(hash string) *Spec { return &Spec{Name: "ws", Hash: hash} }

// running is en running spec's pass.
func running(en *entry, spec *Spec, destroy bool) {
	en.desired, en.destroy = spec, destroy
	en.status.Phase, en.status.Hash, en.status.Destroy = PhaseRunning, spec.Hash, destroy
}

// expect fails unless en is in phase want and every check holds.
func expect(t *testing.T, en *entry, want Phase, checks ...bool) {
	t.Helper()
	if en.status.Phase != want {
		t.Fatalf("phase %v, want %v (status %+v)", en.status.Phase, want, en.status)
	}
	for i, ok := range checks {
		if !ok {
			t.Errorf("check %d failed: entry %+v", i, en)
		}
	}
}

func TestLifecycleTableRowByRow(t *testing.T) {
	plan := &plans.PendingPlan{Hash: "p1", SpecHash: "h1"}
	failed := fmt.Errorf("apply: %w", &tofu.Error{Op: "apply", Summary: "boom"})
	cases := map[string]func(t *testing.T){
		"any but Running / Apply of the applied hash": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			en.rec.AppliedHash, en.status.Phase = "h1", PhaseFailed
			accepted := e.accept(en, rowSpec("h1"), false)
			expect(t, en, PhaseApplied, accepted, e.queue.Len() == 0)
		},
		"any but Running / Destroy with nothing to destroy": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			en.status.Phase = PhasePending
			accepted := e.accept(en, rowSpec("h1"), true)
			expect(t, en, PhaseDestroyed, accepted, e.queue.Len() == 0)
		},
		"AwaitingApproval / Apply/Destroy of the same work": func(t *testing.T) {
			e, en := rowEngine(t, Options{Review: true})
			en.desired, en.pending = rowSpec("h1"), plan
			en.status.Phase, en.status.Hash = PhaseAwaitingApproval, "h1"
			accepted := e.accept(en, rowSpec("h1"), false)
			expect(t, en, PhaseAwaitingApproval, accepted, en.pending == plan)
		},
		"Pending, approved / Apply/Destroy of the same work": func(t *testing.T) {
			e, en := rowEngine(t, Options{Review: true})
			en.desired, en.pending, en.approved = rowSpec("h1"), plan, plan.Hash
			en.status.Phase, en.status.Hash = PhasePending, "h1"
			accepted := e.accept(en, rowSpec("h1"), false)
			expect(t, en, PhasePending, accepted, en.approved == plan.Hash, en.pending == plan)
		},
		"Failed / Apply/Destroy of the same work": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			retry := time.Now().Add(time.Hour)
			en.desired = rowSpec("h1")
			en.status.Phase, en.status.Hash, en.status.NextRetry, en.status.Attempts = PhaseFailed, "h1", retry, 2
			accepted := e.accept(en, rowSpec("h1"), false)
			expect(t, en, PhaseFailed, accepted, en.status.NextRetry.Equal(retry), en.status.Attempts == 2)
		},
		"any / Apply/Destroy of new work": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			en.desired, en.pending = rowSpec("h0"), plan
			en.status.Phase, en.status.Hash = PhaseAwaitingApproval, "h0"
			spec := rowSpec("h1")
			if e.accept(en, spec, false) {
				t.Fatal("accept took new work")
			}
			e.queueWork(en, spec, false)
			expect(t, en, PhasePending, en.status.Hash == "h1", en.pending == nil, en.replaced == "p1", e.queue.Len() == 1)
			// Running stays Running.
			running(en, rowSpec("h1"), false)
			e.queueWork(en, rowSpec("h2"), false)
			expect(t, en, PhaseRunning, en.status.Hash == "h2")
		},
		"new to this process / Apply/Destroy of the work a stored plan": func(t *testing.T) {
			store := &memPlans{}
			e, en := rowEngine(t, Options{Review: true, Plans: store})
			file := []byte("saved plan")
			if err := store.SavePlan(context.Background(), "ws", &plans.Saved{Plan: plans.PendingPlan{Hash: contentHash(file), SpecHash: "h1"}, File: file}); err != nil {
				t.Fatal(err)
			}
			spec := rowSpec("h1")
			e.restorePlan(spec, false)
			expect(t, en, PhaseAwaitingApproval, en.pending != nil && en.pending.Hash == contentHash(file), en.stored)
			if !e.accept(en, spec, false) {
				t.Error("the submission that took the stored plan back was not accepted as the same work")
			}
		},
		"AwaitingApproval / Approve(the plan's hash)": func(t *testing.T) {
			e, en := rowEngine(t, Options{Review: true})
			en.desired, en.pending = rowSpec("h1"), plan
			en.status.Phase, en.status.Hash = PhaseAwaitingApproval, "h1"
			err := e.Approve("ws", plan.Hash)
			expect(t, en, PhasePending, err == nil, en.approved == plan.Hash, e.queue.Len() == 1)
		},
		"Applied / Reconcile (drift check)": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			en.desired, en.rec.AppliedHash = rowSpec("h1"), "h1"
			en.status.Phase, en.status.Hash = PhaseApplied, "h1"
			e.Reconcile("ws")
			expect(t, en, PhaseApplied, en.drift, e.queue.Len() == 1)
		},
		"Pending, Failed / worker, work due": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			for _, ph := range []Phase{PhasePending, PhaseFailed} {
				en.desired = rowSpec("h1")
				en.status.Phase, en.status.Hash, en.status.NextRetry = ph, "h1", time.Now().Add(-time.Second)
				if _, v, _ := e.decide(en, time.Now()); v != runPass {
					t.Errorf("%v: decide chose %v, want runPass", ph, v)
				}
			}
		},
		"Pending / worker, desired hash applied meanwhile": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			en.desired, en.rec.AppliedHash = rowSpec("h1"), "h1"
			en.status.Phase, en.status.Hash = PhasePending, "h1"
			_, v, _ := e.decide(en, time.Now())
			expect(t, en, PhasePending, v == markApplied)
		},
		"Running / review mode, plan with changes": func(t *testing.T) {
			e, en := rowEngine(t, Options{Review: true})
			spec := rowSpec("h1")
			running(en, spec, false)
			e.settle(context.Background(), en, pass{spec: spec}, runOutcome{pending: plan}, 1)
			expect(t, en, PhaseAwaitingApproval, en.pending == plan, en.status.Plan == plan)
		},
		"Running / gate: approval required, window closed": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			spec := rowSpec("h1")
			running(en, spec, false)
			v := plans.GateVerdict{Hold: "window closed", HoldUntil: time.Now().Add(time.Hour)}
			e.settle(context.Background(), en, pass{spec: spec}, runOutcome{pending: plan, verdict: v}, 1)
			expect(t, en, PhaseAwaitingApproval, en.status.Verdict.Hold == v.Hold, en.verdict.Hold == v.Hold)
		},
		"AwaitingApproval / held by a window, worker after it opens": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			en.desired, en.pending = rowSpec("h1"), plan
			en.verdict = plans.GateVerdict{Hold: "window closed", HoldUntil: time.Now().Add(-time.Second)}
			en.status.Phase, en.status.Hash = PhaseAwaitingApproval, "h1"
			_, v, _ := e.decide(en, time.Now())
			expect(t, en, PhaseAwaitingApproval, v == runPass, en.pending == nil, en.verdict.Hold == "")
		},
		"Running / gate denied the plan": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			spec := rowSpec("h1")
			running(en, spec, false)
			denied := &tofu.Error{Op: "gate", Summary: "rule says no", Denied: true}
			e.settle(context.Background(), en, pass{spec: spec}, runOutcome{err: denied}, 1)
			expect(t, en, PhaseFailed, en.status.NextRetry.IsZero(), e.queue.Len() == 0)
		},
		"Running / applied (or plan without changes)": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			spec := rowSpec("h1")
			running(en, spec, false)
			e.settle(context.Background(), en, pass{spec: spec}, runOutcome{changed: true, rec: record{AppliedHash: "h1"}}, 1)
			expect(t, en, PhaseApplied, en.status.AppliedHash == "h1", en.rec.AppliedHash == "h1")
		},
		"Running / destroyed": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			spec := rowSpec("h1")
			running(en, spec, true)
			en.status.AppliedHash = "h0"
			e.settle(context.Background(), en, pass{spec: spec, destroy: true}, runOutcome{changed: true}, 1)
			expect(t, en, PhaseDestroyed, en.status.AppliedHash == "", en.rec.AppliedHash == "")
		},
		"Running / done, but newer work arrived meanwhile": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			spec := rowSpec("h1")
			running(en, spec, false)
			en.desired = rowSpec("h2")
			e.settle(context.Background(), en, pass{spec: spec}, runOutcome{rec: record{AppliedHash: "h1"}}, 1)
			expect(t, en, PhasePending, en.status.AppliedHash == "h1")
		},
		"Running / failed while shutting down, or superseded": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			spec := rowSpec("h1")
			running(en, spec, false)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			e.settle(ctx, en, pass{spec: spec}, runOutcome{err: failed}, 1)
			expect(t, en, PhasePending, en.status.Err != nil, en.status.NextRetry.IsZero())
			// Superseded.
			running(en, spec, false)
			en.desired = rowSpec("h2")
			e.settle(context.Background(), en, pass{spec: spec}, runOutcome{err: failed}, 1)
			expect(t, en, PhasePending)
		},
		"Running / approved plan refused: the state changed": func(t *testing.T) {
			e, en := rowEngine(t, Options{Review: true})
			spec := rowSpec("h1")
			running(en, spec, false)
			en.pending = plan
			e.settle(context.Background(), en, pass{spec: spec, approved: plan}, runOutcome{err: fmt.Errorf("apply: %w", plans.ErrStateChanged)}, 1)
			expect(t, en, PhasePending, en.replaced == plan.Hash, en.pending == nil, e.queue.Len() == 1)
		},
		"Running / drift repair failed": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			spec := rowSpec("h1")
			running(en, spec, false)
			e.settle(context.Background(), en, pass{spec: spec, drift: true}, runOutcome{err: failed}, 1)
			expect(t, en, PhaseApplied, en.status.Err != nil, e.queue.Len() == 0)
		},
		"Running / the template rejected the inputs": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			spec := rowSpec("h1")
			running(en, spec, false)
			invalid := &tofu.Error{Op: "plan", Summary: "bad input", Invalid: true}
			e.settle(context.Background(), en, pass{spec: spec}, runOutcome{err: invalid}, 1)
			expect(t, en, PhaseFailed, en.status.NextRetry.IsZero(), en.status.Attempts == 1)
		},
		"Running / failed": func(t *testing.T) {
			e, en := rowEngine(t, Options{})
			spec := rowSpec("h1")
			running(en, spec, false)
			e.settle(context.Background(), en, pass{spec: spec}, runOutcome{err: failed}, 1)
			expect(t, en, PhaseFailed, !en.status.NextRetry.IsZero(), en.status.Attempts == 1)
		},
	}
	rows := lifecycleRows(t)
	if len(rows) == 0 {
		t.Fatal("no rows found in lifecycle.go's table")
	}
	seen := map[string]bool{}
	for _, row := range rows {
		seen[row] = true
		run, ok := cases[row]
		if !ok {
			t.Errorf("lifecycle.go's row %q has no case here", row)
			continue
		}
		t.Run(row, run)
	}
	for row := range cases {
		if !seen[row] {
			t.Errorf("case %q names no row of lifecycle.go's table", row)
		}
	}
}
