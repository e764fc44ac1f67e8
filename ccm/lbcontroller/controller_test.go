package lbcontroller

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

func TestResultEvent(t *testing.T) {
	fail := errors.New("Error: Resource precondition failed: UDP is not supported")
	mismatch := &tofu.Error{Op: "init", Provider: "registry.opentofu.org/tfccm/lbhost 0.1.0", Summary: "provider registry.opentofu.org/tfccm/lbhost 0.1.0 does not match"}
	cases := []struct {
		r                    workspace.Result
		wantType, wantReason string
		wantIn               string
	}{
		{workspace.Result{Op: "apply", Changed: true, Duration: time.Second}, corev1.EventTypeNormal, ReasonApplied, "plan applied"},
		{workspace.Result{Op: "plan"}, corev1.EventTypeNormal, ReasonApplied, "no changes"},
		{workspace.Result{Op: "plan", Err: fail, Attempt: 2}, corev1.EventTypeWarning, ReasonApplyFailed, "UDP is not supported"},
		{workspace.Result{Op: "plan", Tool: "terraform", Err: fail, Attempt: 2}, corev1.EventTypeWarning, ReasonApplyFailed, "terraform plan failed (attempt 2)"},
		{workspace.Result{Op: "destroy"}, corev1.EventTypeNormal, ReasonDestroyed, "state removed"},
		{workspace.Result{Op: "destroy", Err: fail}, corev1.EventTypeWarning, ReasonDestroyFailed, "tofu destroy failed"},
		{workspace.Result{Op: "plan", Err: tofu.ErrLocked, LockHolder: "alice@laptop"}, corev1.EventTypeWarning, ReasonStateLocked, "alice@laptop"},
		{workspace.Result{Op: "apply", Drift: true, Changed: true}, corev1.EventTypeWarning, ReasonDriftRepaired, "drifted"},
		{workspace.Result{Op: "plan", Drift: true, Err: fail}, corev1.EventTypeWarning, ReasonDriftFailed, "UDP is not supported"},
		{workspace.Result{Op: "plan", Err: &tofu.Error{Op: "plan", Summary: "Invalid value for variable: port must be below 10.", Invalid: true}}, corev1.EventTypeWarning, ReasonInvalidInput, "port must be below 10"},
		{workspace.Result{Op: "apply", Err: fmt.Errorf("apply: serial 3, now 4: %w", plans.ErrStateChanged)}, corev1.EventTypeWarning, ReasonPlanStale, "approval refused: apply: serial 3, now 4"},
		{workspace.Result{Op: "apply", Drift: true, Err: fmt.Errorf("apply: %w", plans.ErrStateChanged)}, corev1.EventTypeWarning, ReasonPlanStale, "approval refused"},
		{workspace.Result{Op: "apply", Err: mismatch, Attempt: 1}, corev1.EventTypeWarning, ReasonProviderChecksumMismatch, "refused provider registry.opentofu.org/tfccm/lbhost 0.1.0"},
		{workspace.Result{Op: "destroy", Err: mismatch}, corev1.EventTypeWarning, ReasonProviderChecksumMismatch, "lock file is kept"},
		{workspace.Result{Op: "plan", Drift: true, Err: mismatch}, corev1.EventTypeWarning, ReasonProviderChecksumMismatch, "registry.opentofu.org/tfccm/lbhost"},
	}
	for _, tc := range cases {
		typ, reason, msg := resultEvent(tc.r)
		if typ != tc.wantType || reason != tc.wantReason || !strings.Contains(msg, tc.wantIn) {
			t.Errorf("resultEvent(%+v) = %s %s %q; want %s %s containing %q", tc.r, typ, reason, msg, tc.wantType, tc.wantReason, tc.wantIn)
		}
	}
}

// TestResultConditionsProviderMismatch: a refused provider sets
// Programmed False with its own reason, naming the provider, also for a
// drift check (whose other failures leave the conditions alone).
func TestResultConditionsProviderMismatch(t *testing.T) {
	mismatch := &tofu.Error{Op: "init", Provider: "registry.opentofu.org/tfccm/lbhost 0.1.0", Summary: "does not match"}
	for _, r := range []workspace.Result{{Op: "apply", Err: mismatch}, {Op: "plan", Drift: true, Err: mismatch}} {
		conds := resultConditions(r)
		if len(conds) != 1 || conds[0].Type != ConditionProgrammed || conds[0].Reason != CondReasonProviderChecksumMismatch ||
			!strings.Contains(conds[0].Message, "registry.opentofu.org/tfccm/lbhost 0.1.0") {
			t.Errorf("resultConditions(%+v) = %+v", r, conds)
		}
	}
}
