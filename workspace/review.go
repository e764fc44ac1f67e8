package workspace

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// Review mode (Options.Review): a plan with changes is not applied. The
// engine keeps the saved plan file, publishes a redacted form of it and
// waits in PhaseAwaitingApproval until Approve is called with the plan's
// content hash; then it applies exactly that saved plan.

// Errors returned by Approve and Wait in review mode.
var (
	// ErrAwaitingApproval is returned by Wait while the workspace's plan
	// waits for Approve.
	ErrAwaitingApproval = errors.New("plan awaiting approval")
	// ErrNoPendingPlan: the workspace has no plan awaiting approval.
	ErrNoPendingPlan = errors.New("no plan awaiting approval")
	// ErrPlanMismatch: the approved hash is not the pending plan's (stale
	// or unknown); nothing is applied.
	ErrPlanMismatch = errors.New("approved plan hash does not match the pending plan")
	// ErrAlreadyApplied: the approved plan was applied already; approving
	// it again does nothing.
	ErrAlreadyApplied = errors.New("this plan was already approved and applied")
)

// Approve applies the workspace's pending plan if planHash is its hash.
// Approving the plan being applied (or just applied) again is a no-op.
// A wrong hash is refused with ErrPlanMismatch and changes nothing; a
// workspace with no pending plan gives ErrNoPendingPlan.
func (e *Engine) Approve(name, planHash string) error {
	if !validName(name) {
		return fmt.Errorf("approve %s: invalid workspace name", name)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	en, ok := e.ws[name]
	if ok && planHash != "" && en.approved == planHash {
		return nil
	}
	if ok && planHash != "" && en.lastApproved == planHash && (en.pending == nil || en.pending.Hash != planHash) {
		return fmt.Errorf("approve %s: %w", name, ErrAlreadyApplied)
	}
	if !ok || en.pending == nil || en.status.Phase != PhaseAwaitingApproval {
		return fmt.Errorf("approve %s: %w", name, ErrNoPendingPlan)
	}
	if en.pending.Hash != planHash {
		return fmt.Errorf("approve %s: %w: got %q, pending %s", name, ErrPlanMismatch, planHash, en.pending.Hash)
	}
	en.approved = planHash
	en.setStatus(func(s *Status) { s.Phase = PhasePending })
	e.queue.Add(name)
	return nil
}

// applyUnsaved plans and applies in one command (`apply` without a saved
// plan) and reports whether the plan had changes; onSummary gets the plan's
// summary when tofu prints it, as the changes start.
func (r *runner) applyUnsaved(ctx context.Context, onSummary func(string)) (changed bool, err error) {
	err = r.WithCredentials("apply", func(vf *tfexec.VarFileOption) error {
		opts := []tfexec.ApplyOption{tfexec.LockTimeout("0s")}
		if vf != nil {
			opts = append(opts, vf)
		}
		return r.Step(ctx, "apply", func(ctx context.Context, tf *tfexec.Terraform) error {
			r.Unsaved = &tofu.PlanLineWriter{OnSummary: onSummary}
			tf.SetStdout(r.Unsaved)
			return tf.Apply(ctx, opts...)
		})
	})
	return !r.Unsaved.NoChanges(), err
}

// applyApproved applies the saved plan, after checking it is byte for byte
// the one approved.
func (r *runner) applyApproved(ctx context.Context, p *plans.PendingPlan) error {
	got, err := fileHash(filepath.Join(r.Dir, planFile))
	if err != nil || got != p.Hash {
		return &tofu.Error{Op: "apply", Summary: fmt.Sprintf("the approved plan %s is no longer saved in the workspace; planning again", p.Hash)}
	}
	if err := r.checkState(ctx, r.spec, p); err != nil {
		return err
	}
	return r.applyPlan(ctx, "apply")
}

// applyPlan applies the saved plan file as step op ("apply", or "destroy"
// for a saved destroy plan); ephemeral credentials are given again (a saved
// plan does not hold them).
func (r *runner) applyPlan(ctx context.Context, op string) error {
	return r.WithCredentials(op, func(vf *tfexec.VarFileOption) error {
		opts := []tfexec.ApplyOption{tfexec.DirOrPlan(planFile), tfexec.LockTimeout("0s")}
		if vf != nil {
			opts = append(opts, vf)
		}
		if r.adoptDone(op == "destroy") {
			opts = append(opts, adoptNullVar()) // as the plan was made
		}
		return r.Step(ctx, op, func(ctx context.Context, tf *tfexec.Terraform) error {
			return tf.Apply(ctx, opts...)
		})
	})
}
