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
)

// Pending plans that outlive the process (review mode with
// Options.Plans): every published plan is handed to the store with the
// saved plan file and a stamp of the state it was made against; a
// restarted engine takes the stored plan back when the same work is
// submitted again, so an approval of its hash still applies it. Every
// approved plan is applied only if the state is still the one it was made
// against (ErrStateChanged otherwise).

// PlanStore keeps pending plans outside the work dir. Load returns nil,
// nil when none is stored; Delete of a missing plan is not an error.
type PlanStore interface {
	SavePlan(ctx context.Context, name string, p *SavedPlan) error
	LoadPlan(ctx context.Context, name string) (*SavedPlan, error)
	DeletePlan(ctx context.Context, name string) error
}

// SavedPlan is a pending plan with its saved plan file, as a PlanStore
// keeps it. The file holds every input of the plan (tofu's own encryption
// applies to it when configured): a store keeps it encrypted.
type SavedPlan struct {
	Plan PendingPlan `json:"plan"`
	File []byte      `json:"file"`
}

// StateStamp identifies the state a plan was made against: tofu bumps the
// serial with every write, and a new lineage is a new state.
type StateStamp struct {
	Lineage string `json:"lineage"`
	Serial  uint64 `json:"serial"`
}

func (s StateStamp) String() string {
	if s.Lineage == "" {
		return "no state"
	}
	return fmt.Sprintf("lineage %s serial %d", s.Lineage, s.Serial)
}

// ErrStateChanged: the state changed since the approved plan was made
// (another apply, a state edited by hand, a plan kept across a restart
// while someone else applied); the plan is not applied and the workspace
// is planned again.
var ErrStateChanged = errors.New("the state changed since the plan was made")

// StateChangedError is ErrStateChanged with the two stamps: the state the
// plan was made against and the state now.
type StateChangedError struct{ Was, Now StateStamp }

func (e *StateChangedError) Error() string { return ErrStateChanged.Error() }

// Is makes errors.Is(err, ErrStateChanged) true.
func (e *StateChangedError) Is(target error) bool { return target == ErrStateChanged }

// Why is what changed, for the plan made next (PendingPlan.ReplacedWhy).
func (e *StateChangedError) Why() string {
	return fmt.Sprintf("the state changed since it was made (%s, now %s)", e.Was, e.Now)
}

// planStoreTimeout bounds one PlanStore call.
const planStoreTimeout = 30 * time.Second

// stateStamp reads the stamp of the workspace's current state.
func (r *runner) stateStamp(ctx context.Context, spec *Spec, op string) (StateStamp, error) {
	doc, err := r.readState(ctx, spec, op)
	if err != nil {
		return StateStamp{}, err
	}
	var s StateStamp
	if len(doc) == 0 {
		return s, nil
	}
	if err := json.Unmarshal(doc, &s); err != nil {
		return s, &Error{Op: op, Summary: fmt.Sprintf("read the state's serial and lineage: %v", err)}
	}
	return s, nil
}

// checkState refuses an approved plan whose state stamp is not the
// current state's.
func (r *runner) checkState(ctx context.Context, spec *Spec, p *PendingPlan) error {
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
	return &Error{Op: "apply", cause: &StateChangedError{Was: *p.State, Now: now}, Summary: fmt.Sprintf(
		"plan %s was made against %s, the state is now %s: the state changed since the plan was made, so it is not applied; planning again (the new plan needs its own approval)",
		p.Hash, p.State, now)}
}

// keepPlan hands a published plan to the store; it reports whether the
// plan was stored. A failure is logged: the plan stays pending in memory
// (a restart then plans again).
func (e *Engine) keepPlan(ctx context.Context, r *runner, p *PendingPlan) bool {
	if e.opts.Plans == nil || !e.opts.Review {
		return false
	}
	file, err := os.ReadFile(filepath.Join(r.dir, planFile))
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, planStoreTimeout)
		err = e.opts.Plans.SavePlan(ctx, filepath.Base(r.dir), &SavedPlan{Plan: *p, File: file})
		cancel()
	}
	if err != nil {
		klog.ErrorS(err, "Could not keep the pending plan in the cluster; it is lost if the controller restarts", "workspace", filepath.Base(r.dir), "planHash", p.Hash)
		return false
	}
	return true
}

// dropPlan reports whether en's stored plan must be deleted (deleteStored,
// outside e.mu) after a pass: the engine stored one and no plan is pending
// any more, or the pass destroyed the workspace — in or out of review
// mode, since an earlier incarnation in review mode may have stored a plan
// for it (an orphan's destroy, say, that another controller then carried
// out). The caller holds e.mu.
func (e *Engine) dropPlan(en *entry) bool {
	destroyed := e.opts.Plans != nil && en.status.Phase == PhaseDestroyed
	if !destroyed && (!en.stored || en.pending != nil) {
		return false
	}
	en.stored = false
	return true
}

func (e *Engine) deleteStored(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), planStoreTimeout)
	defer cancel()
	if err := e.opts.Plans.DeletePlan(ctx, name); err != nil {
		klog.ErrorS(err, "Could not delete the stored plan", "workspace", name)
	}
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
	if why := e.restoreMismatch(sp, spec, destroy); why != "" {
		klog.InfoS("The stored pending plan no longer applies; planning again", "workspace", spec.Name, "planHash", p.Hash, "reason", why)
		e.mu.Lock()
		if en.desired == nil && en.pending == nil {
			en.replaced, en.replacedWhy = p.Hash, why
		}
		e.mu.Unlock()
		e.deleteStored(spec.Name)
		return
	}
	e.mu.Lock()
	if en.desired != nil || en.pending != nil {
		e.mu.Unlock()
		return
	}
	en.pending, en.stored = p, true
	en.desired, en.destroy = spec, destroy
	e.setStatus(en, func(s *Status) {
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

// restoreMismatch says why a stored plan cannot be pending for spec ("" if
// it can) and otherwise writes its file and published forms back into the
// workspace directory.
func (e *Engine) restoreMismatch(sp *SavedPlan, spec *Spec, destroy bool) string {
	p := &sp.Plan
	switch {
	case p.SpecHash != spec.Hash:
		return "the inputs changed since the plan was made"
	case p.Destroy != destroy:
		return "the operation changed since the plan was made"
	case contentHash(sp.File) != p.Hash:
		return "the stored plan file does not match its hash"
	}
	dir := e.Dir(spec.Name)
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
