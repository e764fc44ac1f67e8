package workspace

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// The lifecycle of a workspace: its phases (Phase, status.go) and every
// transition between them, in one place. Apply and Destroy record the
// desired state (submit, accept, queueWork); a worker then decides what
// to do (decide), runs a pass if there is work (run.go) and settles its
// outcome (settle). Approve (review.go) and Reconcile (engine.go) only
// mark an entry and queue it.
//
//	from                on                                        to
//	any but Running     Apply of the applied hash                 Applied (no process)
//	any but Running     Destroy with nothing to destroy           Destroyed (no process)
//	AwaitingApproval    Apply/Destroy of the same work            AwaitingApproval (plan kept)
//	Pending, approved   Apply/Destroy of the same work            Pending (approval kept)
//	Failed              Apply/Destroy of the same work            Failed (retry schedule kept)
//	any                 Apply/Destroy of new work                 Pending (Running stays Running)
//	new to this process Apply/Destroy of the work a stored plan   AwaitingApproval (the plan taken back,
//	                    was made for (Options.Plans)              planstore.go)
//	AwaitingApproval    Approve(the plan's hash)                  Pending
//	Applied             Reconcile (drift check)                   Applied, queued as a drift check
//	Pending, Failed     worker, work due                          Running
//	Pending             worker, desired hash applied meanwhile    Applied (no process)
//	Running             review mode, plan with changes            AwaitingApproval
//	Running             gate: approval required, window closed    AwaitingApproval (verdict says why)
//	AwaitingApproval    held by a window, worker after it opens   Running (planned again)
//	Running             gate denied the plan                      Failed (not retried until new work)
//	Running             applied (or plan without changes)         Applied
//	Running             destroyed                                 Destroyed
//	Running             done, but newer work arrived meanwhile    Pending
//	Running             failed while shutting down, or superseded Pending
//	Running             approved plan refused: the state changed  Pending (planned again at once)
//	Running             drift repair failed                       Applied (Err set; the next drift check retries)
//	Running             the template rejected the inputs          Failed (not retried until new work)
//	Running             failed                                    Failed (retried at NextRetry)

// submit records spec as the desired state (Apply, Destroy).
func (e *Engine) submit(spec Spec, destroy bool) (Status, error) {
	if err := spec.Validate(); err != nil {
		return Status{}, err
	}
	spec = cloneSpec(spec)
	if spec.Hash == "" {
		spec.Hash = spec.ContentHash()
	}
	e.restorePlan(&spec, destroy)
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.entry(spec.Name)
	if !destroy && e.tombs.tombstoned(en) {
		operationsTotal.WithLabelValues("apply", resultRefused).Inc()
		return en.status, fmt.Errorf("apply %s: %w", spec.Name, ErrDestroyed)
	}
	if destroy && !en.tombstone {
		if err := e.tombs.setTombstone(en); err != nil {
			return en.status, err
		}
	}
	if !e.accept(en, &spec, destroy) {
		e.queueWork(en, &spec, destroy)
	}
	return en.status, nil
}

// restorePlan takes back the stored plan of a workspace this process has
// not seen yet: if it was made for spec (same content hash, same
// operation) it is pending again, its file back in the workspace; a plan
// for other inputs is deleted (the next plan names it as replaced).
func (e *Engine) restorePlan(spec *Spec, destroy bool) {
	if e.opts.Plans == nil || !e.opts.Review {
		return
	}
	e.mu.Lock()
	en := e.entry(spec.Name)
	fresh := !en.restoreTried && en.desired == nil && en.pending == nil
	en.restoreTried = true
	e.mu.Unlock()
	if !fresh {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), planStoreTimeout)
	defer cancel()
	sp, err := e.opts.Plans.LoadPlan(ctx, spec.Name)
	if err != nil {
		klog.ErrorS(err, "Could not read the stored pending plan; planning again", "workspace", spec.Name)
		return
	}
	if sp == nil {
		return
	}
	p := &sp.Plan
	if why := e.plans.restoreMismatch(sp, spec, destroy); why != "" {
		klog.InfoS("The stored pending plan no longer applies; planning again", "workspace", spec.Name, "planHash", p.Hash, "reason", why)
		e.mu.Lock()
		if en.desired == nil && en.pending == nil {
			en.replaced, en.replacedWhy = p.Hash, why
		}
		e.mu.Unlock()
		e.plans.deleteStored(spec.Name)
		return
	}
	e.mu.Lock()
	if en.desired != nil || en.pending != nil {
		e.mu.Unlock()
		return
	}
	en.pending, en.stored = p, true
	en.desired, en.destroy = spec, destroy
	en.setStatus(func(s *Status) {
		s.Phase, s.Hash, s.Destroy, s.Plan = PhaseAwaitingApproval, spec.Hash, destroy, p
	})
	e.mu.Unlock()
	klog.InfoS("Pending plan taken back from the cluster after a restart", "workspace", spec.Name, "planHash", p.Hash, "summary", p.Summary())
	// Published again: the previous process may have stopped between
	// keeping the plan and publishing it.
	if e.opts.OnResult != nil {
		e.opts.OnResult(spec.Name, Result{Op: "plan", Tool: e.Tool(), Hash: spec.Hash, AwaitingApproval: true, Plan: p, Drift: p.Drift, Restored: true})
	}
}

// sameWork reports whether spec (with destroy) is the work en is already
// asked to do.
func sameWork(en *entry, spec *Spec, destroy bool) bool {
	return en.desired != nil && en.destroy == destroy && en.status.Hash == spec.Hash
}

// accept settles a submission that needs no run, or keeps the schedule
// of the same work; it reports whether it did. The caller holds e.mu.
func (e *Engine) accept(en *entry, spec *Spec, destroy bool) bool {
	st := &en.status
	running := st.Phase == PhaseRunning
	same := sameWork(en, spec, destroy)
	switch {
	case same && en.pending != nil && en.pending.SpecHash == spec.Hash && en.pending.Destroy == destroy &&
		(st.Phase == PhaseAwaitingApproval || en.approved == en.pending.Hash):
		// Review mode: the saved plan for this work waits for Approve, or
		// was approved and waits for a worker. A drift repair is such a
		// plan too: its inputs are the applied ones, and re-rendering
		// them (the approval itself re-renders) must not drop it.
		en.desired = spec
	case !destroy && !running && en.rec.AppliedHash == spec.Hash:
		// No-op: applied already (possibly by an earlier incarnation).
		en.desired, en.destroy = spec, false
		en.burst, en.due = time.Time{}, time.Time{}
		en.pending, en.approved, en.verdict = nil, "", plans.GateVerdict{}
		e.retries.Forget(spec.Name)
		en.setStatus(func(s *Status) {
			s.Phase, s.Destroy, s.Hash, s.Err, s.Attempts, s.NextRetry = PhaseApplied, false, spec.Hash, nil, 0, time.Time{}
		})
		operationsTotal.WithLabelValues("apply", resultNoop).Inc()
	case destroy && !running && (st.Phase == PhaseDestroyed && st.Hash == spec.Hash || nothingToDestroy(en, spec, e.Dir(spec.Name))):
		en.desired, en.destroy = spec, true
		en.pending, en.approved, en.verdict = nil, "", plans.GateVerdict{}
		en.setStatus(func(s *Status) {
			s.Phase, s.Destroy, s.Hash, s.Err, s.Attempts, s.Outputs = PhaseDestroyed, true, spec.Hash, nil, 0, nil
		})
		operationsTotal.WithLabelValues("destroy", resultNoop).Inc()
	case same && st.Phase == PhaseFailed:
		// Same failing work: keep its retry schedule.
		en.desired = spec
	default:
		return false
	}
	return true
}

// queueWork records spec as en's work and queues it, after the burst's
// quiet time for a coalesced update. The caller holds e.mu.
func (e *Engine) queueWork(en *entry, spec *Spec, destroy bool) {
	same := sameWork(en, spec, destroy)
	en.desired, en.destroy = spec, destroy
	if !same {
		// The new work starts now with a fresh backoff; a retry still
		// scheduled for the old work finds nothing to do (decide).
		e.retries.Forget(spec.Name)
		// A new desired state replaces a pending plan: it is planned
		// afresh and needs its own approval (its plan names the one it
		// replaces).
		if en.pending != nil {
			en.replaced, en.replacedWhy = en.pending.Hash, "the inputs changed"
		}
		en.pending, en.approved, en.verdict = nil, "", plans.GateVerdict{}
		running := en.status.Phase == PhaseRunning
		en.setStatus(func(s *Status) {
			s.Hash, s.Destroy, s.Attempts, s.NextRetry = spec.Hash, destroy, 0, time.Time{}
			if !running {
				s.Phase = PhasePending
			}
		})
	}
	if d := en.coalesceDelay(e.opts.Coalesce, spec, destroy); d > 0 {
		e.queue.AddAfter(spec.Name, d)
		return
	}
	en.burst, en.due = time.Time{}, time.Time{}
	e.queue.Add(spec.Name)
}

// verdict is what decide chose for a workspace.
type verdict int

const (
	skip        verdict = iota // nothing to do now
	later                      // come back at the time decide returned
	markApplied                // the desired hash is applied already
	runPass                    // run a pass (run.go)
)

// pass is the work decide hands to a run.
type pass struct {
	spec     *Spec
	destroy  bool
	drift    bool               // a re-plan of the applied content (Reconcile)
	approved *plans.PendingPlan // review mode: the approved saved plan to apply
}

// decide chooses what a worker does for en now, from its desired and
// recorded state, and consumes its drift and approval marks. The caller
// holds e.mu.
func (e *Engine) decide(en *entry, now time.Time) (pass, verdict, time.Time) {
	spec, destroy, st := en.desired, en.destroy, en.status
	p := pass{spec: spec, destroy: destroy}
	p.drift = en.drift && spec != nil && !destroy && en.rec.AppliedHash == spec.Hash && st.Phase == PhaseApplied
	en.drift = false
	// Review mode: an approval counts only for the pending plan of the
	// current desired state.
	if pl := en.pending; en.approved != "" && pl != nil && spec != nil && pl.Hash == en.approved && pl.SpecHash == spec.Hash && pl.Destroy == destroy {
		p.approved = pl
		p.drift = pl.SpecHash == en.rec.AppliedHash && !destroy
	}
	en.approved = ""
	held := en.verdict.Hold != "" && p.approved == nil
	switch {
	case p.approved != nil:
		return p, runPass, time.Time{} // apply exactly the approved saved plan
	case spec != nil && en.pending != nil && st.Phase == PhaseAwaitingApproval && en.pending.SpecHash == spec.Hash && en.pending.Destroy == destroy &&
		held && !e.opts.Review && en.verdict.Approval == "" && !en.verdict.HoldUntil.IsZero() && !now.Before(en.verdict.HoldUntil):
		// A plan held by a closed change window, and the window is open:
		// plan again (the gate judges the fresh plan) and apply.
		en.pending, en.verdict = nil, plans.GateVerdict{}
		return p, runPass, time.Time{}
	case spec != nil && en.pending != nil && st.Phase == PhaseAwaitingApproval && en.pending.SpecHash == spec.Hash && en.pending.Destroy == destroy:
		return p, skip, time.Time{}
	case spec != nil && !destroy && now.Before(en.due):
		// A coalesced update woken early (the queue keeps the earliest of
		// its delays): wait for the burst's due time.
		return p, later, en.due
	case p.drift:
		return p, runPass, time.Time{} // re-plan what is applied: repairs changes made outside tofu
	case spec != nil && st.Phase == PhaseFailed && st.Hash == spec.Hash && (tofu.IsInvalidInput(st.Err) || IsDenied(st.Err)) && !destroy:
		// The template rejected these inputs: nothing to retry until
		// the spec changes.
		return p, skip, time.Time{}
	case spec != nil && st.Phase == PhaseFailed && st.Hash == spec.Hash && now.Before(st.NextRetry):
		// Woken before the retry is due (a delayed add left from
		// earlier work, which the queue merged with this retry's one
		// keeping the earlier time): ask again for the due time.
		return p, later, st.NextRetry
	case spec == nil,
		!destroy && en.rec.AppliedHash == spec.Hash && st.Phase == PhaseApplied,
		destroy && st.Phase == PhaseDestroyed && st.Hash == spec.Hash:
		return p, skip, time.Time{}
	case !destroy && en.rec.AppliedHash == spec.Hash:
		return p, markApplied, time.Time{}
	}
	return p, runPass, time.Time{}
}

// process brings one workspace to its newest desired state: decide, run,
// settle.
func (e *Engine) process(ctx context.Context, name string) {
	if err := e.budget.acquirePass(ctx); err != nil {
		return // shutting down: Start drops the queued work
	}
	defer e.budget.release()
	e.mu.Lock()
	en := e.entry(name)
	now := time.Now()
	p, v, at := e.decide(en, now)
	switch v {
	case later:
		e.queue.AddAfter(name, at.Sub(now))
	case markApplied:
		en.setStatus(func(s *Status) { s.Phase, s.Err = PhaseApplied, nil })
	}
	if v != runPass {
		e.mu.Unlock()
		return
	}
	rec := en.rec
	en.burst, en.due = time.Time{}, time.Time{} // this run takes the burst
	scrub := e.tofu.Scrub.With(en.secrets).With(mapValues(p.spec.BackendConfig))
	attempt := en.status.Attempts + 1
	en.setStatus(func(s *Status) { s.Phase = PhaseRunning })
	e.mu.Unlock()

	inFlight.Inc()
	start := time.Now()
	out := e.passes.run(ctx, p.spec, p.destroy, rec, scrub, p.approved)
	inFlight.Dec()
	if out.pending != nil {
		out.pending.Drift = p.drift
	}
	res := p.result(e.Tool(), out, time.Since(start), attempt)

	e.mu.Lock()
	e.settle(ctx, en, p, out, attempt)
	drop := e.plans.dropPlan(en)
	e.mu.Unlock()
	switch {
	case res.Err != nil && ctx.Err() != nil:
		// The engine stopped (the CCM is shutting down or handing over)
		// and interrupted the run: not the workspace's failure, and no
		// Warning on its Service. The next leader runs it again.
		klog.InfoS("Not reporting a run the engine's stop interrupted", "workspace", name, "op", res.Op)
	case e.opts.OnResult != nil:
		e.opts.OnResult(name, res)
	}
	if drop { // after the result: its receiver may need the workspace's Service
		e.plans.deleteStored(name)
	}
}

// result is the Result a pass reports (Options.OnResult).
func (p pass) result(tool string, out runOutcome, took time.Duration, attempt int) Result {
	res := Result{Op: out.op, Tool: tool, Hash: p.spec.Hash, Changed: out.changed, Err: out.err, Duration: took, Attempt: attempt, Drift: p.drift}
	if out.err == nil && out.pending != nil {
		res.AwaitingApproval, res.Plan = true, out.pending
	}
	res.Verdict = out.verdict
	var le *tofu.Error
	if errors.As(out.err, &le) {
		res.LockHolder = le.LockHolder
	}
	return res
}

// settle records a pass's outcome in en and moves it to its next phase.
// The caller holds e.mu.
func (e *Engine) settle(ctx context.Context, en *entry, p pass, out runOutcome, attempt int) {
	spec, destroy := p.spec, p.destroy
	en.rec = out.rec
	en.secrets = append(en.secrets[:0], out.secrets...)
	en.stored = en.stored || out.kept
	current := en.desired == spec || (en.desired != nil && en.desired.Hash == spec.Hash && en.destroy == destroy)
	heldApproved := p.approved != nil && out.err == nil && out.pending == p.approved
	if p.approved != nil && !heldApproved {
		en.pending = nil
		en.lastApproved = p.approved.Hash
	}
	switch {
	case out.err == nil && out.pending != nil && current && ctx.Err() == nil:
		e.retries.Forget(en.name)
		en.pending, en.verdict = out.pending, out.verdict
		en.pending.Replaces, en.pending.ReplacedWhy, en.replaced, en.replacedWhy = en.replaced, en.replacedWhy, "", ""
		if heldApproved {
			en.approved = p.approved.Hash // applied when the window opens
		}
		en.setStatus(func(s *Status) {
			s.Phase, s.Err, s.Attempts, s.NextRetry = PhaseAwaitingApproval, nil, 0, time.Time{}
			s.Plan, s.Verdict = out.pending, out.verdict
		})
		if until := out.verdict.HoldUntil; out.verdict.Hold != "" && !until.IsZero() {
			e.queue.AddAfter(en.name, time.Until(until))
		}
	case out.err == nil && out.pending != nil:
		// Superseded (or shutting down) while planning: plan again.
		en.setStatus(func(s *Status) { s.Phase = PhasePending })
	case out.err == nil:
		e.settleDone(en, spec, destroy, out, current)
	case ctx.Err() != nil, !current:
		// Shutting down (not a failure of the workspace), or superseded.
		en.setStatus(func(s *Status) { s.Phase, s.Err = PhasePending, out.err })
	case p.approved != nil && errors.Is(out.err, plans.ErrStateChanged):
		// The approved plan is stale: plan again at once; the new plan
		// names the refused one as replaced.
		en.replaced, en.replacedWhy = p.approved.Hash, plans.ErrStateChanged.Error()
		if sc := (*plans.StateChangedError)(nil); errors.As(out.err, &sc) {
			en.replacedWhy = sc.Why()
		}
		en.setStatus(func(s *Status) { s.Phase, s.Err = PhasePending, out.err })
		e.queue.Add(en.name)
	case p.drift:
		// What was applied stays applied; the failed repair is reported
		// (OnResult) and tried again at the next reconcile.
		en.setStatus(func(s *Status) { s.Phase, s.Err = PhaseApplied, out.err })
	case (tofu.IsInvalidInput(out.err) || IsDenied(out.err)) && !destroy:
		// Invalid inputs (and plans the policy denies) are not retried (NextRetry stays zero): a new
		// spec (the Service or the templates changed) runs at once.
		e.retries.Forget(en.name)
		en.setStatus(func(s *Status) {
			s.Phase, s.Err, s.Attempts, s.NextRetry = PhaseFailed, out.err, attempt, time.Time{}
		})
	default:
		// The queue's rate limiter is the workspace's backoff; its delay
		// is asked for here (AddRateLimited would hide it) so that
		// NextRetry reports exactly when the retry comes.
		d := e.retries.When(en.name)
		en.setStatus(func(s *Status) {
			s.Phase, s.Err, s.Attempts, s.NextRetry = PhaseFailed, out.err, attempt, time.Now().Add(d)
		})
		e.queue.AddAfter(en.name, d)
	}
}

// settleDone records a successful apply or destroy. The caller holds e.mu.
func (e *Engine) settleDone(en *entry, spec *Spec, destroy bool, out runOutcome, current bool) {
	e.retries.Forget(en.name)
	en.replaced, en.replacedWhy = "", ""
	en.setStatus(func(s *Status) {
		s.Err, s.Attempts, s.NextRetry = nil, 0, time.Time{}
		if destroy {
			s.AppliedHash, s.Outputs = "", nil
			s.Phase = PhaseDestroyed
		} else {
			s.AppliedHash, s.Outputs = spec.Hash, out.rec.Outputs
			s.Phase = PhaseApplied
		}
		if !current {
			s.Phase = PhasePending
		}
	})
	if destroy {
		// The directory is gone; forget the record.
		en.rec = record{}
	}
}
