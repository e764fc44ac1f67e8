package plans

// The plan store: pending plans kept outside the work dir across
// restarts, and the stamp of the state a plan was made against.

import (
	"context"
	"errors"
	"fmt"
)

// Store keeps pending plans outside the work dir. Load returns nil,
// nil when none is stored; Delete of a missing plan is not an error.
type Store interface {
	SavePlan(ctx context.Context, name string, p *Saved) error
	LoadPlan(ctx context.Context, name string) (*Saved, error)
	DeletePlan(ctx context.Context, name string) error
}

// Saved is a pending plan with its saved plan file, as a Store
// keeps it. The file holds every input of the plan (tofu's own encryption
// applies to it when configured): a store keeps it encrypted.
type Saved struct {
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
