package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// Pending plans that outlive the process (review mode with
// Options.Plans): every published plan is handed to the store with the
// saved plan file and a stamp of the state it was made against; a
// restarted engine takes the stored plan back when the same work is
// submitted again, so an approval of its hash still applies it. Every
// approved plan is applied only if the state is still the one it was made
// against (ErrStateChanged otherwise).

// planStoreTimeout bounds one PlanStore call.
const planStoreTimeout = 30 * time.Second

// stateStamp reads the stamp of the workspace's current state.
func (r *runner) stateStamp(ctx context.Context, spec *Spec, op string) (plans.StateStamp, error) {
	doc, err := r.readState(ctx, spec, op)
	if err != nil {
		return plans.StateStamp{}, err
	}
	var s plans.StateStamp
	if len(doc) == 0 {
		return s, nil
	}
	if err := json.Unmarshal(doc, &s); err != nil {
		return s, &tofu.Error{Op: op, Summary: fmt.Sprintf("read the state's serial and lineage: %v", err)}
	}
	return s, nil
}

// checkState refuses an approved plan whose state stamp is not the
// current state's.
func (r *runner) checkState(ctx context.Context, spec *Spec, p *plans.PendingPlan) error {
	if p.State == nil {
		return nil
	}
	now, err := r.stateStamp(ctx, spec, "apply")
	if err != nil {
		return err
	}
	if now == *p.State {
		return nil
	}
	return (&tofu.Error{Op: "apply", Summary: fmt.Sprintf(
		"plan %s was made against %s, the state is now %s: the state changed since the plan was made, so it is not applied; planning again (the new plan needs its own approval)",
		p.Hash, p.State, now)}).WithCause(&plans.StateChangedError{Was: *p.State, Now: now})
}

// planKeeper is the engine's use of its PlanStore (Options.Plans): pending
// plans kept in review mode, and deleted when no longer pending.
type planKeeper struct {
	store   plans.Store // nil: none
	review  bool
	workDir string
}

// keepPlan hands a published plan to the store; it reports whether the
// plan was stored. A failure is logged: the plan stays pending in memory
// (a restart then plans again); a plan too large to keep
// (plans.TooLargeError) is the error: it is not left pending.
func (k planKeeper) keepPlan(ctx context.Context, r *runner, p *plans.PendingPlan) (bool, error) {
	if k.store == nil || !k.review {
		return false, nil
	}
	file, err := os.ReadFile(filepath.Join(r.Dir, planFile))
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, planStoreTimeout)
		err = k.store.SavePlan(ctx, filepath.Base(r.Dir), &plans.Saved{Plan: *p, File: file})
		cancel()
	}
	var tooLarge *plans.TooLargeError
	if errors.As(err, &tooLarge) {
		return false, &tofu.Error{Op: "plan", Summary: fmt.Sprintf("plan %s: %v", p.Hash, err)}
	}
	if err != nil {
		klog.ErrorS(err, "Could not keep the pending plan in the cluster; it is lost if the controller restarts", "workspace", filepath.Base(r.Dir), "planHash", p.Hash)
		return false, nil
	}
	return true, nil
}

// dropPlan reports whether en's stored plan must be deleted (deleteStored,
// outside e.mu) after a pass: the engine stored one and no plan is pending
// any more, or the pass destroyed the workspace — in or out of review
// mode, since an earlier incarnation in review mode may have stored a plan
// for it (an orphan's destroy, say, that another controller then carried
// out). The caller holds e.mu.
func (k planKeeper) dropPlan(en *entry) bool {
	destroyed := k.store != nil && en.status.Phase == PhaseDestroyed
	if !destroyed && (!en.stored || en.pending != nil) {
		return false
	}
	en.stored = false
	return true
}

// deleteStored deletes workspace name's stored plan.
func (k planKeeper) deleteStored(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), planStoreTimeout)
	defer cancel()
	if err := k.store.DeletePlan(ctx, name); err != nil {
		klog.ErrorS(err, "Could not delete the stored plan", "workspace", name)
	}
}

// restoreMismatch says why a stored plan cannot be pending for spec ("" if
// it can) and otherwise writes its file and published forms back into the
// workspace directory.
func (k planKeeper) restoreMismatch(sp *plans.Saved, spec *Spec, destroy bool) string {
	p := &sp.Plan
	switch {
	case p.SpecHash != spec.Hash:
		return "the inputs changed since the plan was made"
	case p.Destroy != destroy:
		return "the operation changed since the plan was made"
	case contentHash(sp.File) != p.Hash:
		return "the stored plan file does not match its hash"
	}
	dir := filepath.Join(k.workDir, spec.Name)
	if err := os.MkdirAll(filepath.Join(dir, metaDir), 0o700); err != nil {
		return err.Error()
	}
	for path, data := range map[string][]byte{planFile: sp.File, planTextFile: []byte(p.Text), planJSONFile: p.JSON} {
		if err := os.WriteFile(filepath.Join(dir, path), data, 0o600); err != nil {
			return err.Error()
		}
	}
	return ""
}
