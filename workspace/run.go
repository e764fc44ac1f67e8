package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/internal/secret"
	"github.com/tfccm/tfccm/workspace/locks"
	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// One pass over a workspace (passes.run): prepare the directory, init if
// needed, then apply, destroy or apply the approved plan; planOrPublish is
// the one plan → publish path.

// passes runs one pass of a workspace. It holds what a pass needs (tofu,
// the options, the catalog, the plan store) and nothing of the engine's
// memory of workspaces: the lifecycle (lifecycle.go) decides and settles.
type passes struct {
	t          *tofu.Setup
	opts       *Options
	encryption string // identifies the encryption configuration (encryptionID)
	catalog    *catalog
	plans      planKeeper
}

// dir is the directory of workspace name.
func (ps *passes) dir(name string) string { return filepath.Join(ps.opts.WorkDir, name) }

// runOutcome is what one pass over a workspace produced.
type runOutcome struct {
	op      string // the step that decided the outcome
	changed bool
	err     error
	rec     record
	secrets []string
	pending *plans.PendingPlan // review mode: a saved plan awaiting approval
	verdict plans.GateVerdict  // the gate's verdict on the pass's plan
	kept    bool               // pending is in Options.Plans
}

// fail is the outcome with step op failed with err.
func (o runOutcome) fail(op string, err error) runOutcome {
	o.op, o.err = op, err
	return o
}

// run performs one pass for spec: init (if needed) and plan+apply, or
// destroy. In review mode a plan with changes is saved and published
// instead of applied (out.pending), and approved, when set, is the saved
// plan to apply.
func (ps *passes) run(ctx context.Context, spec *Spec, destroy bool, rec record, scrub *secret.Scrubber, approved *plans.PendingPlan) (out runOutcome) {
	out.rec, out.op = rec, "apply"
	if destroy {
		out.op = "destroy"
	}
	r, spec, err := ps.prepare(ctx, spec, destroy, &out.rec, scrub, approved)
	if err != nil {
		return out.fail("write", err)
	}
	defer func() {
		// Keep the claim if tofu may have been killed holding a lock.
		if out.err == nil || ctx.Err() == nil {
			locks.RemoveClaim(r.Dir)
		}
	}()
	if initHash := ps.t.Inits.RecordInitHash(spec.initHash()); out.rec.InitHash != initHash {
		if err := r.Init(ctx, spec.dirSpec(), out.rec.InitHash != ""); err != nil {
			return out.fail("init", err)
		}
		out.rec.InitHash = initHash
		if err := writeRecord(r.Dir, out.rec); err != nil {
			return out.fail("init", &tofu.Error{Op: "init", Summary: err.Error()})
		}
	}
	if err := r.pushErrored(ctx); err != nil {
		return out.fail("state push", err)
	}
	r.drift, r.created = !destroy && rec.AppliedHash == spec.Hash, rec.AppliedHash == ""
	switch {
	case approved != nil:
		out = ps.runApproved(ctx, r, spec, destroy, approved, out)
	case destroy:
		out = ps.runDestroy(ctx, r, spec, out)
	default:
		out = ps.runApply(ctx, r, spec, out)
	}
	out.verdict = r.verdict
	return out
}

// prepare readies the workspace directory for a pass and claims it: the
// spec's files (for a destroy, those last applied), the record, a stale
// plan removed. It returns the runner and the spec to run.
func (ps *passes) prepare(ctx context.Context, spec *Spec, destroy bool, rec *record, scrub *secret.Scrubber, approved *plans.PendingPlan) (*runner, *Spec, error) {
	dir := ps.dir(spec.Name)
	// The previous incarnation's claim must be read before ours replaces it.
	oldClaim, hadClaim := locks.ReadClaim(dir)
	if destroy && hadClaim && oldClaim.Op == "apply" && approved == nil && !ps.opts.Review {
		// The last apply was interrupted (killed, or stopped): it may have
		// created things its state does not record. Apply what it was
		// applying again, so the state holds everything, then destroy.
		if conv, ok := ps.converge(ctx, spec, dir, *rec, scrub); ok {
			*rec = conv.rec
			oldClaim, hadClaim = locks.ReadClaim(dir)
		}
	}
	if destroy {
		// Destroy with the configuration the state was applied with (see
		// appliedDir), not with inputs that may have become invalid since.
		hash, retain := spec.Hash, spec.Retain
		if prev, ok := lastApplied(dir, spec); ok {
			spec = &prev
		}
		if retain {
			// Keep the resources: forget them (retain.go).
			forget, err := ForgetSpec(*spec)
			if err != nil {
				return nil, nil, &tofu.Error{Op: "destroy", Summary: scrub.Scrub(err.Error())}
			}
			forget.Retain = true
			spec = &forget
		}
		// Still the destroy that was asked for: its hash names it (a
		// published destroy plan is matched with the request by it).
		spec.Hash = hash
	}
	if err := os.MkdirAll(filepath.Join(dir, metaDir), 0o700); err != nil {
		return nil, nil, &tofu.Error{Op: "write", Summary: err.Error()}
	}
	if err := spec.WriteDir(dir); err != nil {
		return nil, nil, &tofu.Error{Op: "write", Summary: scrub.Scrub(err.Error())}
	}
	if err := writeRecord(dir, *rec); err != nil {
		return nil, nil, &tofu.Error{Op: "write", Summary: err.Error()}
	}
	// A plan saved by an interrupted run is stale: always plan afresh,
	// unless applying the approved saved plan.
	if approved == nil {
		removePublished(dir)
	}
	r := newRunner(ps.t, dir, spec, scrub)
	r.OldClaim, r.HadClaim = oldClaim, hadClaim
	if err := locks.WriteClaim(dir, locks.SelfClaim(ps.opts.Identity, opName(destroy))); err != nil {
		return nil, nil, &tofu.Error{Op: "write", Summary: err.Error()}
	}
	return r, spec, nil
}

func opName(destroy bool) string {
	if destroy {
		return "destroy"
	}
	return "apply"
}

// runApproved applies the approved saved plan (review mode).
func (ps *passes) runApproved(ctx context.Context, r *runner, spec *Spec, destroy bool, approved *plans.PendingPlan, out runOutcome) runOutcome {
	// The gate is asked again before the apply: a change window may have
	// closed since the plan was published.
	if _, err := ps.judge(ctx, r, spec, destroy); err != nil {
		return out.fail("plan", err)
	}
	if r.verdict.Hold != "" {
		return out.planned(approved, nil) // approved, applied when the window opens
	}
	if err := r.applyApproved(ctx, approved); err != nil {
		return out.fail("apply", err)
	}
	if destroy {
		return ps.finishDestroy(ctx, r, spec, out)
	}
	out.changed = true
	removePublished(r.Dir)
	return ps.finishApply(ctx, r, spec, out)
}

// runDestroy destroys the workspace's resources, or in review mode plans
// their destruction for approval.
func (ps *passes) runDestroy(ctx context.Context, r *runner, spec *Spec, out runOutcome) runOutcome {
	// A workspace whose state holds nothing (its first apply failed
	// before creating anything) is not run through `tofu destroy`,
	// which would re-validate the inputs that failed and so keep a
	// Service's finalizer forever.
	empty, err := r.stateEmpty(ctx, spec)
	switch {
	case err != nil:
		return out.fail("destroy", err)
	case empty:
	case ps.opts.Review || ps.opts.Gate != nil || spec.Retain:
		// A destroy plan (a forget plan when retained), judged by the
		// gate (and published in review mode), then applied.
		changes, p, err := ps.planOrPublish(ctx, r, spec, true)
		if err != nil || p != nil {
			return out.planned(p, err).keep(ctx, ps.plans, r)
		}
		if changes {
			if spec.Retain {
				ps.applyStarts(ctx, r, spec) // "N to forget", nothing destroyed
			}
			if err := r.applyPlan(ctx, "destroy"); err != nil {
				return out.fail("destroy", err)
			}
		}
		removePublished(r.Dir)
	default:
		if err := r.WithCredentials("destroy", func(vf *tfexec.VarFileOption) error {
			opts := []tfexec.DestroyOption{tfexec.LockTimeout("0s")}
			if vf != nil {
				opts = append(opts, vf)
			}
			return r.Step(ctx, "destroy", func(ctx context.Context, tf *tfexec.Terraform) error {
				return tf.Destroy(ctx, opts...)
			})
		}); err != nil {
			return out.fail("destroy", err)
		}
	}
	return ps.finishDestroy(ctx, r, spec, out)
}

// runApply plans and applies the plan if it has changes (in review mode,
// publishes it for approval instead).
func (ps *passes) runApply(ctx context.Context, r *runner, spec *Spec, out runOutcome) runOutcome {
	if ps.planless(r) {
		// No record of an apply in this work dir, which a new pod's
		// emptyDir never holds: the state tells whether an earlier
		// incarnation applied the workspace. If it holds resources, plan
		// first and apply only changes: a no-op apply rewrites the state
		// (serial+1: OpenTofu encodes check_results in map order, so its
		// own "unchanged" test fails) and takes its lock, on every
		// workspace at every leader change.
		if empty, err := r.stateEmpty(ctx, spec); err != nil || empty {
			return ps.runFirstApply(ctx, r, spec, out)
		}
	}
	changes, p, err := ps.planOrPublish(ctx, r, spec, false)
	if err != nil || p != nil {
		return out.planned(p, err).keep(ctx, ps.plans, r)
	}
	// A state last written with another encryption configuration (a
	// rotated key) is re-encrypted by applying even a plan without changes.
	if changes || out.rec.Encryption != ps.encryption {
		ps.applyStarts(ctx, r, spec)
		if err := r.applyPlan(ctx, "apply"); err != nil {
			return out.fail("apply", err)
		}
		out.changed = changes
	}
	if !changes {
		operationsTotal.WithLabelValues("apply", resultNoop).Inc()
	}
	_ = os.Remove(filepath.Join(r.Dir, planFile))
	return ps.finishApply(ctx, r, spec, out)
}

// planless reports whether a pass applies without a saved plan: the first
// apply of a workspace when no plan is published or judged (no review
// mode, no gate). Nothing reads the plan between plan and apply then, and
// one apply that plans itself costs one command, not two.
func (ps *passes) planless(r *runner) bool {
	return r.created && !r.drift && !ps.opts.Review && ps.opts.Gate == nil
}

// runFirstApply applies a workspace never applied before in one command;
// OnApplyStart is told as the plan's summary is printed, before the
// changes start (and before the result is reported). Inputs the template
// rejects while it plans fail the pass at plan, as in a plan.
func (ps *passes) runFirstApply(ctx context.Context, r *runner, spec *Spec, out runOutcome) runOutcome {
	var told sync.WaitGroup
	onSummary := func(summary string) {
		if ps.opts.OnApplyStart == nil {
			return
		}
		// Not on tofu's stdout: an Event and a status write may wait for
		// the apiserver.
		told.Go(func() { ps.opts.OnApplyStart(spec.Name, summary) })
	}
	changed, err := r.applyUnsaved(ctx, onSummary)
	told.Wait()
	if err != nil {
		var te *tofu.Error
		if errors.As(err, &te) && te.Op == "plan" {
			return out.fail("plan", err)
		}
		return out.fail("apply", err)
	}
	out.changed = changed
	if !changed {
		operationsTotal.WithLabelValues("apply", resultNoop).Inc()
	}
	return ps.finishApply(ctx, r, spec, out)
}

// applyStarts tells OnApplyStart that spec's saved plan is about to be
// applied, with its summary (a summary tofu cannot show is left out).
func (ps *passes) applyStarts(ctx context.Context, r *runner, spec *Spec) {
	if ps.opts.OnApplyStart == nil {
		return
	}
	summary, err := r.planSummary(ctx)
	if err != nil {
		klog.V(2).InfoS("Could not summarize the plan to apply", "workspace", spec.Name, "err", err)
		summary = "changes"
	}
	ps.opts.OnApplyStart(spec.Name, summary)
}

// planOrPublish is the one plan → publish path: it plans spec (its
// destruction when destroy) to the saved plan file and, in review mode,
// publishes a plan with changes, which is then pending.
func (ps *passes) planOrPublish(ctx context.Context, r *runner, spec *Spec, destroy bool) (changes bool, pending *plans.PendingPlan, err error) {
	opts := []tfexec.PlanOption{tfexec.Out(planFile), tfexec.LockTimeout("0s")}
	switch {
	case destroy && spec.Retain:
		// The forget configuration (retain.go): nothing to read.
		opts = append(opts, tfexec.Refresh(false))
	case destroy:
		opts = append(opts, tfexec.Destroy(true))
	}
	if r.adoptDone(destroy) {
		opts = append(opts, adoptNullVar())
	}
	err = r.WithCredentials("plan", func(vf *tfexec.VarFileOption) error {
		if vf != nil {
			opts = append(opts, vf)
		}
		var err error
		var stderr bytes.Buffer
		changes, err = tofu.StepResult(ctx, r.Runner, "plan", func(ctx context.Context, tf *tfexec.Terraform) (bool, error) {
			r.planLine = &tofu.PlanLineWriter{}
			stderr.Reset()
			tf.SetStdout(r.planLine)
			tf.SetStderr(&stderr)
			return tf.Plan(ctx, opts...)
		})
		if err == nil && !exists(filepath.Join(r.Dir, planFile)) {
			// Exit code 2 means "changes", and is also how a Go program
			// exits when it crashes (tofu, or the job runner's stand-in):
			// a plan is applied only from the file it saved.
			klog.InfoS("The plan reported success but saved no plan", "workspace", spec.Name, "output", r.Scrub.Scrub(tofu.LogLines(stderr.String())))
			err = &tofu.Error{Op: "plan", Summary: fmt.Sprintf("%s plan reported success but saved no plan (%s); nothing was applied", r.Setup.Tool(), planFile)}
		}
		return err
	})
	if err != nil || !changes {
		return changes, nil, err
	}
	held, err := ps.judge(ctx, r, spec, destroy)
	if err != nil || (!ps.reviews(r) && !held) {
		return changes, nil, err
	}
	pending, err = r.publishPlan(ctx, spec, destroy)
	if err != nil {
		return true, nil, err
	}
	if stamp, err := r.stateStamp(ctx, spec, "plan"); err == nil {
		pending.State = &stamp
	} else {
		klog.InfoS("Could not read the state's serial and lineage; the plan is applied without checking them", "workspace", spec.Name, "err", err)
	}
	return true, pending, nil
}

// reviews reports whether the judged plan waits for a person in review
// mode: not when an approve rule approved it (GateVerdict.Approved).
func (ps *passes) reviews(r *runner) bool {
	if ps.opts.Review && r.verdict.Approved != "" {
		klog.InfoS("Applying the plan without review: a policy rule approves it", "workspace", filepath.Base(r.Dir), "rule", r.verdict.Approved)
		return false
	}
	return ps.opts.Review
}

// judge asks the gate about the saved plan and records its verdict on r:
// a denial is the error; held reports a plan that must wait (approval a
// rule requires, a closed change window).
func (ps *passes) judge(ctx context.Context, r *runner, spec *Spec, destroy bool) (held bool, err error) {
	v, err := r.gate(ctx, ps.opts.Gate, spec, destroy)
	if err != nil {
		return false, err
	}
	r.verdict = v
	if !ps.opts.Review {
		r.verdict.Approved = "" // approves nothing without review mode
	}
	if v.Denied != "" {
		return false, &tofu.Error{Op: "plan", Summary: v.Denied, Denied: true}
	}
	return v.Approval != "" || v.Hold != "", nil
}

// planned is the outcome of a plan that failed (err) or is pending.
func (o runOutcome) planned(p *plans.PendingPlan, err error) runOutcome {
	if err != nil {
		return o.fail("plan", err)
	}
	o.op, o.pending = "plan", p
	return o
}

// keep stores a pending plan (Options.Plans).
func (o runOutcome) keep(ctx context.Context, keeper planKeeper, r *runner) runOutcome {
	if o.err == nil && o.pending != nil {
		kept, err := keeper.keepPlan(ctx, r, o.pending)
		if err != nil {
			// Too large to keep: no plan is pending, nothing applied.
			removePublished(r.Dir)
			o.pending = nil
			return o.fail("plan", err)
		}
		o.kept = kept
	}
	return o
}

// converge re-applies the files last written into dir (the interrupted
// apply's workspace) with spec's backend. It reports whether it ran; a
// failure is logged and the destroy goes on with what the state holds.
func (ps *passes) converge(ctx context.Context, spec *Spec, dir string, rec record, scrub *secret.Scrubber) (runOutcome, bool) {
	prev, ok := readAs(dir, spec)
	if !ok {
		return runOutcome{}, false
	}
	klog.InfoS("Destroying a workspace whose last apply was interrupted: applying it again first so that the state records what that apply created", "workspace", spec.Name)
	conv := ps.run(ctx, &prev, false, rec, scrub, nil)
	if conv.err != nil {
		klog.InfoS("Re-apply before destroy failed; destroying what the state records", "workspace", spec.Name, "err", conv.err)
	}
	return conv, true
}

// finishDestroy deletes the Terraform workspace (if named), the state and
// the directory after the resources are destroyed.
func (ps *passes) finishDestroy(ctx context.Context, r *runner, spec *Spec, out runOutcome) runOutcome {
	out.changed = true
	if spec.namedWorkspace() {
		if err := r.Step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
			if err := tf.WorkspaceSelect(ctx, "default"); err != nil {
				return err
			}
			return tf.WorkspaceDelete(ctx, spec.StateWorkspace)
		}); err != nil {
			return out.fail("destroy", err)
		}
	}
	if err := removeState(ctx, spec, r.Dir, ps.opts.WorkDir); err != nil {
		return out.fail("destroy", &tofu.Error{Op: "destroy", Summary: r.Scrub.Scrub(err.Error())})
	}
	ps.catalog.catalogRemove(ctx, spec.Name)
	out.rec = record{}
	return out
}

// finishApply records outputs and the applied hash after a successful
// plan (and apply, if it had changes).
func (ps *passes) finishApply(ctx context.Context, r *runner, spec *Spec, out runOutcome) runOutcome {
	outputs, err := r.outputs(ctx, spec)
	if err != nil {
		return out.fail("output", err)
	}
	public, secrets := splitOutputs(outputs)
	out.secrets = secrets
	if err := saveApplied(r.Dir, spec, out.rec.AppliedHash); err != nil {
		return out.fail("apply", &tofu.Error{Op: "apply", Summary: r.Scrub.Scrub(err.Error())})
	}
	out.rec.AppliedHash = spec.Hash
	out.rec.AppliedAt = time.Now().UTC()
	out.rec.Outputs = public
	out.rec.Encryption = ps.encryption
	ps.catalog.catalogPut(ctx, spec, &out.rec)
	if err := writeRecord(r.Dir, out.rec); err != nil {
		return out.fail("apply", &tofu.Error{Op: "apply", Summary: err.Error()})
	}
	return out
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
