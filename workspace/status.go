package workspace

import (
	"encoding/json"
	"time"

	"github.com/tfccm/tfccm/internal/secret"
	"github.com/tfccm/tfccm/workspace/plans"
)

// Phase is where a workspace stands.
type Phase string

// Phases of a workspace.
const (
	// PhaseUnknown: the engine has never seen the workspace.
	PhaseUnknown Phase = ""
	// PhasePending: desired state recorded, waiting for a worker (or for
	// the retry delay after a failure; see Status.Err).
	PhasePending Phase = "Pending"
	// PhaseRunning: tofu is running for it.
	PhaseRunning Phase = "Running"
	// PhaseApplied: the desired hash is applied; Outputs are current.
	PhaseApplied Phase = "Applied"
	// PhaseDestroyed: resources destroyed, state and directory removed.
	PhaseDestroyed Phase = "Destroyed"
	// PhaseFailed: the last attempt failed; a retry is scheduled.
	PhaseFailed Phase = "Failed"
	// PhaseAwaitingApproval (review mode only): the plan has changes and
	// is saved; Status.Plan describes it; Approve applies it.
	PhaseAwaitingApproval Phase = "AwaitingApproval"
)

// Status is a snapshot of one workspace.
type Status struct {
	Name  string
	Phase Phase
	// Destroy is true when the desired state is "destroyed".
	Destroy bool
	// Hash is the desired content hash; AppliedHash the last applied one.
	Hash        string
	AppliedHash string
	// Outputs are the last applied root outputs as JSON; sensitive ones
	// are replaced by the JSON string secret.Placeholder.
	Outputs map[string]json.RawMessage
	// Err is the last failure, user-facing and scrubbed of secrets.
	Err error
	// Attempts counts consecutive failed attempts for the desired hash.
	Attempts int
	// NextRetry is when a failed workspace is tried again; zero when it is
	// not retried (tofu.IsInvalidInput(Err): only a new spec runs).
	NextRetry time.Time
	// Since is when the phase last changed.
	Since time.Time
	// Plan is the plan awaiting approval (PhaseAwaitingApproval only).
	Plan *plans.PendingPlan
	// Verdict is the gate's verdict on Plan: why it waits (approval a
	// rule requires, a closed change window) and its warnings.
	Verdict plans.GateVerdict
}

// Done reports whether the status is final for its desired hash: applied,
// destroyed or failed.
func (s Status) Done() bool {
	return s.Phase == PhaseApplied || s.Phase == PhaseDestroyed || s.Phase == PhaseFailed
}

// Result is the outcome of one plan/apply/destroy attempt, for Events.
type Result struct {
	// Op is "plan", "apply", "destroy" (the step that decided the outcome)
	// or "init".
	Op string
	// Tool is the binary that ran it, for messages: "tofu" or "terraform".
	Tool string
	// Hash is the content hash the attempt worked on.
	Hash string
	// Changed is true when the plan had changes that were applied.
	Changed bool
	// Err is nil on success; otherwise user-facing and scrubbed.
	Err error
	// LockHolder is set when the state lock is held by someone else.
	LockHolder string
	// Duration is the attempt's wall time.
	Duration time.Duration
	// Attempt is 1 for the first try of a hash.
	Attempt int
	// Drift is true for a Reconcile run: the content was already applied
	// and was re-planned; Changed then means drift was found and repaired.
	Drift bool
	// AwaitingApproval is true when, in review mode, the plan had changes
	// and was saved instead of applied; Plan describes it.
	AwaitingApproval bool
	Plan             *plans.PendingPlan
	// Verdict is the gate's verdict on the plan (gate.go): its warnings,
	// and why a plan awaiting approval waits (Approval, Hold).
	Verdict plans.GateVerdict
	// Restored is true when the pending plan was taken back from
	// Options.Plans after a restart (nothing ran): it is published again,
	// but it is not news.
	Restored bool
}

// SensitiveValue replaces a sensitive output's value.
var SensitiveValue = secret.PlaceholderJSON
