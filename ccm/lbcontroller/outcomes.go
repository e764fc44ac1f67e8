package lbcontroller

import (
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// The outcome table: the one place that turns an engine status or result
// into what a Service's owner sees. Each row names an outcome (a phase or
// a result, with its error kind) and gives its conditions, its Event, how
// EnsureLoadBalancer answers, the retry and the phase text. The first
// row whose when matches is the outcome; EnsureLoadBalancer,
// EnsureLoadBalancerDeleted, the conditions after a submit and the Events
// and conditions of a result all read it.

// engineState is what a row is matched against: a workspace's status
// (result false) or an engine result (result true).
type engineState struct {
	result bool
	st     workspace.Status
	r      workspace.Result
}

func ofStatus(st workspace.Status) engineState { return engineState{st: st} }
func ofResult(r workspace.Result) engineState  { return engineState{result: true, r: r} }

// answer is how EnsureLoadBalancer answers an outcome.
type answer int

const (
	answerRetry     answer = iota // api.RetryError after the row's retry
	answerStatus                  // the load balancer's status (its ingress output)
	answerRefused                 // the inputs are refused: told once, not retried until they change
	answerFailed                  // an error (the service controller retries with its backoff)
	answerElsewhere               // cloudprovider.ImplementedElsewhere: nothing recorded, the approval syncs again
)

// retryKind says when the outcome is retried.
type retryKind int

const (
	retryNone    retryKind = iota // not until the Service, its nodes, the templates or the policy change
	retryAfter                    // after the row's after
	retryBackoff                  // by the engine's (or service controller's) backoff
)

// words is the text of a condition or an Event for a state.
type words func(s engineState) string

// conditionRow is one condition an outcome sets.
type conditionRow struct {
	typ    string
	status bool
	reason string
	text   words
}

// eventRow is the Event an outcome records.
type eventRow struct {
	typ, reason string
	text        words
}

// outcome is one row of the table.
type outcome struct {
	name       string
	when       func(s engineState) bool
	conditions []conditionRow
	event      *eventRow // nil: no Event
	answer     answer
	retry      retryKind
	after      time.Duration // retryAfter's delay
	phase      words         // how the workspace is said to be ("load balancer X is ..."); nil: not in flight
	fail       func(s engineState) error
	// held: a plan a closed change window holds; it is published and told
	// before anything else of its result (held.go).
	held bool
}

// The words several rows share.
var (
	acceptedRow = conditionRow{ConditionAccepted, true, CondReasonAccepted, said("the template set accepts the Service's inputs")}
	appliedRow  = conditionRow{ConditionProgrammed, true, CondReasonApplied, said("the load balancer runs the Service's current inputs")}
	deniedRow   = conditionRow{ConditionProgrammed, false, CondReasonPolicyDenied, func(s engineState) string { return fmt.Sprintf("plan denied, nothing applied: %v", s.err()) }}
	invalidRow  = conditionRow{ConditionAccepted, false, CondReasonInvalidInput, func(s engineState) string { return s.err().Error() }}
	// rejectedRow: Programmed after the template rejected a result's inputs.
	rejectedRow = conditionRow{ConditionProgrammed, false, CondReasonInvalidInput, said("the template rejected this Service's inputs; nothing is retried until they change")}
	heldRow     = conditionRow{ConditionProgrammed, false, CondReasonChangeWindowClosed, func(s engineState) string { return heldMessage(s.plan(), s.verdict()) }}
	awaitingRow = conditionRow{ConditionProgrammed, false, CondReasonAwaitingApproval, func(s engineState) string {
		return fmt.Sprintf("plan %s (%s) awaits approval by an approver on its ConfigMap in tfccm's namespace (tfccm approve)%s", s.plan().Hash, s.plan().Summary(), because(s.verdict()))
	}}
	applyingRow = conditionRow{ConditionProgrammed, false, CondReasonApplying, func(s engineState) string { return "the Service's workspace is " + s.phaseText() }}
)

// outcomes is the table: the statuses first, then the results. It is
// joined in init because rows' words read the table (a failed run's
// condition says what its Event says).
var outcomes []outcome

func init() { outcomes = append(slices.Clip(statusOutcomes), resultOutcomes...) }

// statusOutcomes are the rows of a workspace's status (after a submit, or
// what EnsureLoadBalancer and EnsureLoadBalancerDeleted find).
var statusOutcomes = []outcome{
	{name: "applied", when: status(workspace.PhaseApplied, current), conditions: []conditionRow{acceptedRow, appliedRow}, answer: answerStatus},
	{name: "drift repair held by a change window", when: status(workspace.PhaseAwaitingApproval, current, withPlan, held), conditions: []conditionRow{acceptedRow},
		answer: answerStatus, retry: retryAfter, after: awaitingRetry, phase: heldPhase},
	{name: "drift repair awaits approval", when: status(workspace.PhaseAwaitingApproval, current, withPlan), conditions: []conditionRow{acceptedRow},
		answer: answerStatus, retry: retryAfter, after: awaitingRetry, phase: awaitingPhase},
	{name: "drift repair awaits approval, plan not known", when: status(workspace.PhaseAwaitingApproval, current), conditions: []conditionRow{acceptedRow},
		answer: answerStatus, retry: retryAfter, after: awaitingRetry, phase: waiting},
	{name: "inputs rejected", when: status(workspace.PhaseFailed, failedWith(tofu.IsInvalidInput)),
		conditions: []conditionRow{invalidRow, {ConditionProgrammed, false, CondReasonInvalidInput, said("the template rejected this Service's inputs")}},
		answer:     answerRefused, fail: func(s engineState) error {
			return fmt.Errorf("load balancer %s: the template rejected this Service's inputs: %w (not retried until the Service, its nodes or the templates change; the running load balancer is untouched)", s.st.Name, s.st.Err)
		}},
	{name: "plan denied", when: status(workspace.PhaseFailed, failedWith(workspace.IsDenied)), conditions: []conditionRow{acceptedRow, deniedRow},
		answer: answerFailed, fail: func(s engineState) error {
			return fmt.Errorf("load balancer %s: plan denied: %w (not retried until the Service, its nodes, the templates or the policy change; the running load balancer is untouched)", s.st.Name, s.st.Err)
		}},
	{name: "failed", when: status(workspace.PhaseFailed), answer: answerFailed, retry: retryBackoff, fail: func(s engineState) error {
		return fmt.Errorf("load balancer %s: %w (next retry %s)", s.st.Name, s.st.Err, s.st.NextRetry.Format(time.RFC3339))
	}},
	{name: "held by a change window", when: status(workspace.PhaseAwaitingApproval, withPlan, held), conditions: []conditionRow{acceptedRow, heldRow},
		answer: answerElsewhere, retry: retryAfter, after: awaitingRetry, phase: heldPhase},
	{name: "awaiting approval", when: status(workspace.PhaseAwaitingApproval, withPlan), conditions: []conditionRow{acceptedRow, awaitingRow},
		answer: answerElsewhere, retry: retryAfter, after: awaitingRetry, phase: awaitingPhase},
	{name: "awaiting approval, plan not known", when: status(workspace.PhaseAwaitingApproval), answer: answerElsewhere, retry: retryAfter, after: awaitingRetry, phase: waiting},
	{name: "being destroyed", when: status(workspace.PhaseRunning, destroying), conditions: []conditionRow{applyingRow},
		retry: retryAfter, after: inFlightRetry, phase: said("being destroyed")},
	{name: "being applied", when: status(workspace.PhaseRunning), conditions: []conditionRow{applyingRow}, retry: retryAfter, after: inFlightRetry, phase: said("being planned and applied")},
	{name: "queued", when: status(workspace.PhasePending), conditions: []conditionRow{applyingRow}, retry: retryAfter, after: inFlightRetry, phase: waiting},
	{name: "not yet current", when: func(s engineState) bool { return !s.result }, retry: retryAfter, after: inFlightRetry, phase: waiting},
}

// resultOutcomes are the rows of an engine result (onResult). A destroy's
// result sets no condition; the engine retries failed runs itself.
var resultOutcomes = []outcome{
	{name: "held by a change window", when: result(awaiting, withHold), held: true, conditions: []conditionRow{acceptedRow, heldRow},
		event: &eventRow{corev1.EventTypeNormal, ReasonChangeWindowClosed, heldRow.text}},
	{name: "state locked, destroy or drift check", when: result(locked, either(destroyOp, drift)), event: &lockedEvent, retry: retryBackoff},
	{name: "state locked", when: result(locked), event: &lockedEvent, conditions: []conditionRow{failedRow}, retry: retryBackoff},
	{name: "approved plan stale, destroy", when: result(erred(isStale), destroyOp), event: &staleEvent},
	{name: "approved plan stale", when: result(erred(isStale)), event: &staleEvent,
		conditions: []conditionRow{acceptedRow, {ConditionProgrammed, false, CondReasonPlanStale, func(s engineState) string { return s.r.Err.Error() }}}},
	{name: "provider checksum mismatch, destroy", when: result(erred(isMismatch), destroyOp), event: &mismatchEvent},
	{name: "provider checksum mismatch", when: result(erred(isMismatch)), event: &mismatchEvent,
		conditions: []conditionRow{{ConditionProgrammed, false, CondReasonProviderChecksumMismatch, eventText(mismatchEvent)}}},
	{name: "drift check denied", when: result(drift, not(destroyOp), erred(workspace.IsDenied)), event: &driftFailedEvent, conditions: []conditionRow{acceptedRow, deniedRow}},
	{name: "drift check rejected", when: result(drift, not(destroyOp), erred(tofu.IsInvalidInput)), event: &driftFailedEvent, conditions: []conditionRow{invalidRow, rejectedRow}},
	{name: "drift check failed", when: result(drift, erred(anyErr)), event: &driftFailedEvent, retry: retryBackoff},
	{name: "destroy awaiting approval", when: result(awaiting, destroyOp)},
	{name: "plan awaiting approval", when: result(awaiting), conditions: []conditionRow{acceptedRow, awaitingRow}}, // review mode records its Event
	{name: "drift repaired", when: result(drift, changed), conditions: []conditionRow{acceptedRow, {ConditionProgrammed, true, CondReasonDriftRepaired, said("the infrastructure had drifted from the applied plan and was re-applied")}},
		event: &eventRow{corev1.EventTypeWarning, ReasonDriftRepaired, func(s engineState) string {
			return fmt.Sprintf("the infrastructure had drifted from the applied plan; re-applied in %s", s.r.Duration.Round(time.Millisecond))
		}}},
	{name: "no drift", when: result(drift)},
	{name: "destroy denied", when: result(erred(workspace.IsDenied), destroyOp), event: &deniedEvent},
	{name: "plan denied", when: result(erred(workspace.IsDenied)), event: &deniedEvent, conditions: []conditionRow{acceptedRow, deniedRow}},
	{name: "inputs rejected", when: result(erred(tofu.IsInvalidInput), not(destroyOp)), conditions: []conditionRow{invalidRow, rejectedRow},
		event: &eventRow{corev1.EventTypeWarning, ReasonInvalidInput, func(s engineState) string {
			return fmt.Sprintf("the template rejected this Service's inputs; fix the Service (or its tfccm.io/vars) and nothing is retried until then: %v", s.r.Err)
		}}},
	{name: "destroy failed", when: result(erred(anyErr), destroyOp), retry: retryBackoff, event: &eventRow{corev1.EventTypeWarning, ReasonDestroyFailed, func(s engineState) string {
		return fmt.Sprintf("%s destroy failed (attempt %d): %v", tool(s.r), s.r.Attempt, s.r.Err)
	}}},
	{name: "failed", when: result(erred(anyErr)), event: &failedEvent, conditions: []conditionRow{failedRow}, retry: retryBackoff},
	{name: "destroyed", when: result(destroyOp), event: &eventRow{corev1.EventTypeNormal, ReasonDestroyed, func(s engineState) string {
		return fmt.Sprintf("destroyed in %s; state removed", s.r.Duration.Round(time.Millisecond))
	}}},
	{name: "applied", when: result(changed), conditions: []conditionRow{acceptedRow, appliedRow}, event: &eventRow{corev1.EventTypeNormal, ReasonApplied, func(s engineState) string {
		return fmt.Sprintf("plan applied in %s", s.r.Duration.Round(time.Millisecond))
	}}},
	{name: "no changes", when: result(), conditions: []conditionRow{acceptedRow, appliedRow}, event: &eventRow{corev1.EventTypeNormal, ReasonApplied, func(s engineState) string {
		return fmt.Sprintf("plan has no changes (%s)", s.r.Duration.Round(time.Millisecond))
	}}},
}

// The phase texts of a plan that waits.
var (
	heldPhase     words = func(s engineState) string { return "holding " + heldMessage(s.st.Plan, s.st.Verdict) }
	awaitingPhase words = func(s engineState) string {
		return fmt.Sprintf("awaiting approval of plan %s (%s; an approver approves it with tfccm approve)", s.st.Plan.Hash, s.st.Plan.Summary())
	}
)

// The Events several result rows share.
var (
	lockedEvent = eventRow{corev1.EventTypeWarning, ReasonStateLocked, func(s engineState) string {
		return fmt.Sprintf("state is locked by %s; not stealing it: %v", s.r.LockHolder, s.r.Err)
	}}
	staleEvent    = eventRow{corev1.EventTypeWarning, ReasonPlanStale, func(s engineState) string { return fmt.Sprintf("approval refused: %v", s.r.Err) }}
	mismatchEvent = eventRow{corev1.EventTypeWarning, ReasonProviderChecksumMismatch, func(s engineState) string {
		return fmt.Sprintf("%s %s refused provider %s: its package does not match the dependency lock file's checksums; nothing was applied and the lock file is kept (attempt %d): %v",
			tool(s.r), s.r.Op, tofu.ProviderMismatch(s.r.Err), s.r.Attempt, s.r.Err)
	}}
	driftFailedEvent = eventRow{corev1.EventTypeWarning, ReasonDriftFailed, func(s engineState) string {
		return fmt.Sprintf("re-plan of the applied load balancer failed: %v", s.r.Err)
	}}
	deniedEvent = eventRow{corev1.EventTypeWarning, ReasonPlanDenied, func(s engineState) string { return fmt.Sprintf("plan denied, nothing applied: %v", s.r.Err) }}
	failedEvent = eventRow{corev1.EventTypeWarning, ReasonApplyFailed, func(s engineState) string {
		return fmt.Sprintf("%s %s failed (attempt %d): %v", tool(s.r), s.r.Op, s.r.Attempt, s.r.Err)
	}}
	// failedRow: Programmed after a failed run says what its Event says.
	failedRow = conditionRow{ConditionProgrammed, false, CondReasonApplyFailed, func(s engineState) string { return s.eventText() }}
)

// outcomeOf is the row of s (every state has one: each list ends in a
// catch-all).
func outcomeOf(s engineState) *outcome {
	for i := range outcomes {
		if outcomes[i].when(s) {
			return &outcomes[i]
		}
	}
	panic("outcome table has no catch-all row") // unreachable: both lists end in one
}

// conditionsOf are the conditions the row of s sets.
func (o *outcome) conditionsOf(s engineState) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range o.conditions {
		out = append(out, condition(c.typ, c.status, c.reason, c.text(s)))
	}
	return out
}

// retryAfterOf is how soon the service controller asks again.
func (o *outcome) retryAfterOf() time.Duration {
	if o.retry == retryAfter {
		return o.after
	}
	return inFlightRetry
}

func (s engineState) err() error {
	if s.result {
		return s.r.Err
	}
	return s.st.Err
}

func (s engineState) plan() *plans.PendingPlan {
	if s.result {
		return s.r.Plan
	}
	return s.st.Plan
}

func (s engineState) verdict() plans.GateVerdict {
	if s.result {
		return s.r.Verdict
	}
	return s.st.Verdict
}

// phaseText is how the row of s says the workspace is.
func (s engineState) phaseText() string {
	o := outcomeOf(s)
	if o.phase == nil {
		return waiting(s)
	}
	return o.phase(s)
}

// eventText is the message of the row of s's Event ("" without one).
func (s engineState) eventText() string {
	if o := outcomeOf(s); o.event != nil {
		return o.event.text(s)
	}
	return ""
}

// The conditions of rows.

func status(phase workspace.Phase, and ...func(workspace.Status) bool) func(engineState) bool {
	return func(s engineState) bool {
		if s.result || s.st.Phase != phase {
			return false
		}
		for _, f := range and {
			if !f(s.st) {
				return false
			}
		}
		return true
	}
}

func current(st workspace.Status) bool    { return st.AppliedHash == st.Hash }
func withPlan(st workspace.Status) bool   { return st.Plan != nil }
func held(st workspace.Status) bool       { return st.Verdict.Hold != "" }
func destroying(st workspace.Status) bool { return st.Destroy }
func failedWith(is func(error) bool) func(workspace.Status) bool {
	return func(st workspace.Status) bool { return is(st.Err) }
}

func result(and ...func(workspace.Result) bool) func(engineState) bool {
	return func(s engineState) bool {
		if !s.result {
			return false
		}
		for _, f := range and {
			if !f(s.r) {
				return false
			}
		}
		return true
	}
}

func locked(r workspace.Result) bool    { return r.LockHolder != "" }
func destroyOp(r workspace.Result) bool { return r.Op == "destroy" }
func drift(r workspace.Result) bool     { return r.Drift }
func changed(r workspace.Result) bool   { return r.Changed }
func awaiting(r workspace.Result) bool  { return r.AwaitingApproval && r.Plan != nil }
func withHold(r workspace.Result) bool  { return r.Verdict.Hold != "" }
func erred(is func(error) bool) func(workspace.Result) bool {
	return func(r workspace.Result) bool { return r.Err != nil && is(r.Err) }
}
func either(a, b func(workspace.Result) bool) func(workspace.Result) bool {
	return func(r workspace.Result) bool { return a(r) || b(r) }
}
func not(f func(workspace.Result) bool) func(workspace.Result) bool {
	return func(r workspace.Result) bool { return !f(r) }
}

func anyErr(error) bool          { return true }
func isStale(err error) bool     { return errors.Is(err, plans.ErrStateChanged) }
func isMismatch(err error) bool  { return tofu.ProviderMismatch(err) != "" }
func said(text string) words     { return func(engineState) string { return text } }
func eventText(e eventRow) words { return e.text }
func waiting(s engineState) string {
	if s.st.Destroy {
		return "waiting to be destroyed"
	}
	return "waiting to be applied"
}

// The table's readers for one kind of state.

// statusConditions are the conditions a workspace's status tells right
// after a submit.
func statusConditions(st workspace.Status) []metav1.Condition {
	s := ofStatus(st)
	return outcomeOf(s).conditionsOf(s)
}

// resultConditions are the conditions an engine result tells.
func resultConditions(r workspace.Result) []metav1.Condition {
	s := ofResult(r)
	return outcomeOf(s).conditionsOf(s)
}

// resultEvent is the Event type, reason and message of an engine result
// ("" reason: none).
func resultEvent(r workspace.Result) (string, string, string) {
	s := ofResult(r)
	if e := outcomeOf(s).event; e != nil {
		return e.typ, e.reason, e.text(s)
	}
	return "", "", ""
}

// phaseText is how a workspace's status is said to be.
func phaseText(st workspace.Status) string { return ofStatus(st).phaseText() }

// retryAfterStatus is how soon the service controller asks again about a
// workspace in st.
func retryAfterStatus(st workspace.Status) time.Duration {
	return outcomeOf(ofStatus(st)).retryAfterOf()
}
