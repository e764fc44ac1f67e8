package provider

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/workspace"
)

func TestResultEvent(t *testing.T) {
	fail := errors.New("Error: Resource precondition failed: UDP is not supported")
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
		{workspace.Result{Op: "plan", Err: workspace.ErrLocked, LockHolder: "alice@laptop"}, corev1.EventTypeWarning, ReasonStateLocked, "alice@laptop"},
		{workspace.Result{Op: "apply", Drift: true, Changed: true}, corev1.EventTypeWarning, ReasonDriftRepaired, "drifted"},
		{workspace.Result{Op: "plan", Drift: true, Err: fail}, corev1.EventTypeWarning, ReasonDriftFailed, "UDP is not supported"},
		{workspace.Result{Op: "plan", Err: &workspace.Error{Op: "plan", Summary: "Invalid value for variable: port must be below 10.", Invalid: true}}, corev1.EventTypeWarning, ReasonInvalidInput, "port must be below 10"},
		{workspace.Result{Op: "apply", Err: fmt.Errorf("apply: serial 3, now 4: %w", workspace.ErrStateChanged)}, corev1.EventTypeWarning, ReasonPlanStale, "approval refused: apply: serial 3, now 4"},
		{workspace.Result{Op: "apply", Drift: true, Err: fmt.Errorf("apply: %w", workspace.ErrStateChanged)}, corev1.EventTypeWarning, ReasonPlanStale, "approval refused"},
	}
	for _, tc := range cases {
		typ, reason, msg := resultEvent(tc.r)
		if typ != tc.wantType || reason != tc.wantReason || !strings.Contains(msg, tc.wantIn) {
			t.Errorf("resultEvent(%+v) = %s %s %q; want %s %s containing %q", tc.r, typ, reason, msg, tc.wantType, tc.wantReason, tc.wantIn)
		}
	}
}
