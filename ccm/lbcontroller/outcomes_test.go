package lbcontroller

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// TestOutcomeTable walks the outcome table row by row: each case is a
// state that lands on one named row, and says what the Service's owner
// sees of it (conditions, Event, answer, retry, phase text). Every row has
// its case.
func TestOutcomeTable(t *testing.T) {
	denied := fmt.Errorf("gate: %w", &tofu.Error{Op: "plan", Summary: "deletes a load balancer", Denied: true})
	invalid := &tofu.Error{Op: "plan", Summary: "port 53/UDP unsupported", Invalid: true}
	stale := fmt.Errorf("%w: %w", errors.New("approved plan"), plans.ErrStateChanged)
	mismatch := &tofu.Error{Op: "init", Provider: "registry.opentofu.org/tfccm/lbhost 0.1.0", Summary: "checksum"}
	boom := errors.New("boom")
	plan := &plans.PendingPlan{Hash: "abc"}
	held := plans.GateVerdict{Hold: "not applied: the change window opens at 02:00"}
	st := func(phase workspace.Phase, f func(*workspace.Status)) engineState {
		s := workspace.Status{Name: "lb-c-u1", Phase: phase, Hash: "new", AppliedHash: "old"}
		if f != nil {
			f(&s)
		}
		return ofStatus(s)
	}
	cur := func(s *workspace.Status) { s.AppliedHash = s.Hash }
	withP := func(s *workspace.Status) { s.Plan = plan }
	heldP := func(s *workspace.Status) { s.Plan, s.Verdict = plan, held }
	res := func(r workspace.Result) engineState { r.Attempt, r.Duration = 2, time.Second; return ofResult(r) }
	cases := []struct {
		row        string
		state      engineState
		conditions string // type=status/reason, space separated
		event      string // type/reason ("": none)
		answer     answer
		retry      retryKind
		phase      string // a part of the phase text
	}{
		{"applied", st(workspace.PhaseApplied, cur), "tfccm.io/Accepted=True/Accepted tfccm.io/Programmed=True/Applied", "", answerStatus, retryNone, "waiting to be applied"},
		{"drift repair held by a change window", st(workspace.PhaseAwaitingApproval, func(s *workspace.Status) { cur(s); heldP(s) }), "tfccm.io/Accepted=True/Accepted", "", answerStatus, retryAfter, "holding plan abc"},
		{"drift repair awaits approval", st(workspace.PhaseAwaitingApproval, func(s *workspace.Status) { cur(s); withP(s) }), "tfccm.io/Accepted=True/Accepted", "", answerStatus, retryAfter, "awaiting approval of plan abc"},
		{"drift repair awaits approval, plan not known", st(workspace.PhaseAwaitingApproval, cur), "tfccm.io/Accepted=True/Accepted", "", answerStatus, retryAfter, "waiting to be applied"},
		{"inputs rejected", st(workspace.PhaseFailed, func(s *workspace.Status) { s.Err = invalid }), "tfccm.io/Accepted=False/InvalidInput tfccm.io/Programmed=False/InvalidInput", "", answerRefused, retryNone, ""},
		{"plan denied", st(workspace.PhaseFailed, func(s *workspace.Status) { s.Err = denied }), "tfccm.io/Accepted=True/Accepted tfccm.io/Programmed=False/PolicyDenied", "", answerFailed, retryNone, ""},
		{"failed", st(workspace.PhaseFailed, func(s *workspace.Status) { s.Err = boom }), "", "", answerFailed, retryBackoff, ""},
		{"held by a change window", st(workspace.PhaseAwaitingApproval, heldP), "tfccm.io/Accepted=True/Accepted tfccm.io/Programmed=False/ChangeWindowClosed", "", answerElsewhere, retryAfter, "holding plan abc"},
		{"awaiting approval", st(workspace.PhaseAwaitingApproval, withP), "tfccm.io/Accepted=True/Accepted tfccm.io/Programmed=False/AwaitingApproval", "", answerElsewhere, retryAfter, "awaiting approval of plan abc"},
		{"awaiting approval, plan not known", st(workspace.PhaseAwaitingApproval, nil), "", "", answerElsewhere, retryAfter, "waiting to be applied"},
		{"being destroyed", st(workspace.PhaseRunning, func(s *workspace.Status) { s.Destroy = true }), "tfccm.io/Programmed=False/Applying", "", answerRetry, retryAfter, "being destroyed"},
		{"being applied", st(workspace.PhaseRunning, nil), "tfccm.io/Programmed=False/Applying", "", answerRetry, retryAfter, "being planned and applied"},
		{"queued", st(workspace.PhasePending, func(s *workspace.Status) { s.Destroy = true }), "tfccm.io/Programmed=False/Applying", "", answerRetry, retryAfter, "waiting to be destroyed"},
		{"not yet current", st(workspace.PhaseApplied, nil), "", "", answerRetry, retryAfter, "waiting to be applied"},

		{"held by a change window", res(workspace.Result{Op: "plan", AwaitingApproval: true, Plan: plan, Verdict: held}), "tfccm.io/Accepted=True/Accepted tfccm.io/Programmed=False/ChangeWindowClosed", "Normal/TerraformChangeWindowClosed", answerRetry, retryNone, ""},
		{"state locked, destroy or drift check", res(workspace.Result{Op: "destroy", Err: tofu.ErrLocked, LockHolder: "alice"}), "", "Warning/TerraformStateLocked", answerRetry, retryBackoff, ""},
		{"state locked", res(workspace.Result{Op: "plan", Err: tofu.ErrLocked, LockHolder: "alice"}), "tfccm.io/Programmed=False/ApplyFailed", "Warning/TerraformStateLocked", answerRetry, retryBackoff, ""},
		{"approved plan stale, destroy", res(workspace.Result{Op: "destroy", Err: stale}), "", "Warning/TerraformPlanStale", answerRetry, retryNone, ""},
		{"approved plan stale", res(workspace.Result{Op: "apply", Err: stale}), "tfccm.io/Accepted=True/Accepted tfccm.io/Programmed=False/PlanStale", "Warning/TerraformPlanStale", answerRetry, retryNone, ""},
		{"provider checksum mismatch, destroy", res(workspace.Result{Op: "destroy", Err: mismatch}), "", "Warning/TerraformProviderChecksumMismatch", answerRetry, retryNone, ""},
		{"provider checksum mismatch", res(workspace.Result{Op: "init", Err: mismatch}), "tfccm.io/Programmed=False/ProviderChecksumMismatch", "Warning/TerraformProviderChecksumMismatch", answerRetry, retryNone, ""},
		{"drift check denied", res(workspace.Result{Op: "plan", Drift: true, Err: denied}), "tfccm.io/Accepted=True/Accepted tfccm.io/Programmed=False/PolicyDenied", "Warning/TerraformDriftCheckFailed", answerRetry, retryNone, ""},
		{"drift check rejected", res(workspace.Result{Op: "plan", Drift: true, Err: invalid}), "tfccm.io/Accepted=False/InvalidInput tfccm.io/Programmed=False/InvalidInput", "Warning/TerraformDriftCheckFailed", answerRetry, retryNone, ""},
		{"drift check failed", res(workspace.Result{Op: "plan", Drift: true, Err: boom}), "", "Warning/TerraformDriftCheckFailed", answerRetry, retryBackoff, ""},
		{"destroy awaiting approval", res(workspace.Result{Op: "destroy", AwaitingApproval: true, Plan: plan}), "", "", answerRetry, retryNone, ""},
		{"plan awaiting approval", res(workspace.Result{Op: "plan", AwaitingApproval: true, Plan: plan}), "tfccm.io/Accepted=True/Accepted tfccm.io/Programmed=False/AwaitingApproval", "", answerRetry, retryNone, ""},
		{"drift repaired", res(workspace.Result{Op: "apply", Drift: true, Changed: true}), "tfccm.io/Accepted=True/Accepted tfccm.io/Programmed=True/DriftRepaired", "Warning/TerraformDriftRepaired", answerRetry, retryNone, ""},
		{"no drift", res(workspace.Result{Op: "plan", Drift: true}), "", "", answerRetry, retryNone, ""},
		{"destroy denied", res(workspace.Result{Op: "destroy", Err: denied}), "", "Warning/TerraformPlanDenied", answerRetry, retryNone, ""},
		{"plan denied", res(workspace.Result{Op: "plan", Err: denied}), "tfccm.io/Accepted=True/Accepted tfccm.io/Programmed=False/PolicyDenied", "Warning/TerraformPlanDenied", answerRetry, retryNone, ""},
		{"inputs rejected", res(workspace.Result{Op: "plan", Err: invalid}), "tfccm.io/Accepted=False/InvalidInput tfccm.io/Programmed=False/InvalidInput", "Warning/TerraformInvalidInput", answerRetry, retryNone, ""},
		{"destroy failed", res(workspace.Result{Op: "destroy", Err: boom}), "", "Warning/TerraformDestroyFailed", answerRetry, retryBackoff, ""},
		{"failed", res(workspace.Result{Op: "apply", Err: boom}), "tfccm.io/Programmed=False/ApplyFailed", "Warning/TerraformApplyFailed", answerRetry, retryBackoff, ""},
		{"destroyed", res(workspace.Result{Op: "destroy"}), "", "Normal/TerraformDestroyed", answerRetry, retryNone, ""},
		{"applied", res(workspace.Result{Op: "apply", Changed: true}), "tfccm.io/Accepted=True/Accepted tfccm.io/Programmed=True/Applied", "Normal/TerraformApplied", answerRetry, retryNone, ""},
		{"no changes", res(workspace.Result{Op: "plan"}), "tfccm.io/Accepted=True/Accepted tfccm.io/Programmed=True/Applied", "Normal/TerraformApplied", answerRetry, retryNone, ""},
	}
	walked := map[*outcome]bool{}
	for _, tc := range cases {
		t.Run(tc.row, func(t *testing.T) {
			o := outcomeOf(tc.state)
			walked[o] = true
			if o.name != tc.row {
				t.Fatalf("row %q, want %q", o.name, tc.row)
			}
			var conds []string
			for _, c := range o.conditionsOf(tc.state) {
				if c.Message == "" {
					t.Errorf("condition %s has no message", c.Type)
				}
				conds = append(conds, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
			}
			if got := strings.Join(conds, " "); got != tc.conditions {
				t.Errorf("conditions %q, want %q", got, tc.conditions)
			}
			event := ""
			if o.event != nil {
				if o.event.text(tc.state) == "" {
					t.Errorf("Event %s has no text", o.event.reason)
				}
				event = o.event.typ + "/" + o.event.reason
			}
			if event != tc.event {
				t.Errorf("Event %q, want %q", event, tc.event)
			}
			if o.answer != tc.answer || o.retry != tc.retry {
				t.Errorf("answer %d retry %d, want %d %d", o.answer, o.retry, tc.answer, tc.retry)
			}
			if o.fail != nil != (tc.answer == answerFailed || tc.answer == answerRefused) {
				t.Errorf("fail set %v for answer %d", o.fail != nil, tc.answer)
			}
			if !tc.state.result && !strings.Contains(tc.state.phaseText(), tc.phase) {
				t.Errorf("phase text %q, want it to contain %q", tc.state.phaseText(), tc.phase)
			}
		})
	}
	for i := range outcomes {
		if !walked[&outcomes[i]] {
			t.Errorf("row %q has no case", outcomes[i].name)
		}
	}
}
