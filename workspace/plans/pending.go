package plans

// A plan with changes waiting for approval (review mode, or held by the
// gate), and its counts.

import (
	"fmt"

	tfjson "github.com/hashicorp/terraform-json"
)

// PendingPlan is a saved plan waiting for approval.
type PendingPlan struct {
	// Hash is the sha256 (hex) of the saved plan file: an approval names
	// exactly this plan.
	Hash string
	// SpecHash is the workspace content hash the plan was made for.
	SpecHash string
	// Destroy is true for a destroy plan.
	Destroy bool
	// Drift is true for a drift repair: the applied content re-planned
	// because the infrastructure drifted from it.
	Drift bool
	// Replaces is the hash of the plan that awaited approval before new
	// inputs replaced it (that plan can no longer be approved), or "".
	Replaces string
	// ReplacedWhy says why the replaced plan can no longer be approved:
	// "the inputs changed", or the state changed under it (with the state's
	// serial and lineage then and now), or why a stored plan did not apply.
	ReplacedWhy string `json:",omitempty"`
	// Add, Change and Destroy count resource actions (a replacement counts
	// as one add and one destroy).
	Add, Change, Remove int
	// Import counts resources the plan imports (adoption: tfccm.io/adopt),
	// whatever else it does to them; Forget counts resources removed from
	// the state while the object stays in the cloud.
	Import, Forget int `json:",omitempty"`
	// Text is `tofu show -no-color` of the plan (tofu redacts sensitive
	// values; tfccm's secrets are scrubbed too).
	Text string
	// JSON is a redacted JSON form: resource and output changes with every
	// value marked sensitive replaced by secret.Placeholder.
	JSON []byte
	// State is the state the plan was made against (StateStamp): an
	// approval applies the plan only while the state is still this one.
	// nil when it could not be read.
	State *StateStamp `json:",omitempty"`
}

// Summary is the one-line form: "N to add, M to change, K to destroy",
// prefixed "drift repair: " for a drift repair.
func (p *PendingPlan) Summary() string {
	s := fmt.Sprintf("%d to add, %d to change, %d to destroy", p.Add, p.Change, p.Remove)
	if p.Import > 0 {
		s = fmt.Sprintf("%d to import, %s", p.Import, s)
	}
	if p.Forget > 0 {
		s = fmt.Sprintf("%s, %d to forget", s, p.Forget)
	}
	if p.Drift {
		s = "drift repair (the infrastructure drifted from the applied plan): " + s
	}
	return s
}

// CountChange adds one resource change to p's counts: its actions
// (Count) and whether it imports the resource; false when it neither
// imports nor changes anything (a no-op or a read).
func (p *PendingPlan) CountChange(c *tfjson.Change) bool {
	if c == nil {
		return false
	}
	imported := c.Importing != nil
	if imported {
		p.Import++
	}
	return p.Count(c.Actions) || imported
}

// Count adds one resource's actions to p's counts; false for a no-op or a
// read.
func (p *PendingPlan) Count(a tfjson.Actions) bool {
	switch {
	case a.Forget():
		p.Forget++
	case a.Replace():
		p.Add++
		p.Remove++
	case a.Create():
		p.Add++
	case a.Update():
		p.Change++
	case a.Delete():
		p.Remove++
	default:
		return false
	}
	return true
}
