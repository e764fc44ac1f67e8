package ccm

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/policy"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/window"
	"github.com/tfccm/tfccm/workspace"
)

// planGate is the engine's one gate (workspace.Options.Gate): the cloud
// config's policy rules over every plan with changes, then its change
// windows.
type planGate struct {
	policy  *policy.Set
	windows *window.Schedule
	now     func() time.Time
}

var _ workspace.Gate = (*planGate)(nil).judge

// newGate compiles the config's policies and change windows; nil when
// there is nothing to check (every plan passes at once).
func newGate(cfg *config.Config) (*planGate, error) {
	set, err := policy.Compile(cfg.Policies)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	windows, err := window.New(cfg.ChangeWindows)
	if err != nil {
		return nil, fmt.Errorf("change_windows: %w", err)
	}
	if set.Empty() && windows == nil {
		return nil, nil
	}
	return &planGate{policy: set, windows: windows, now: time.Now}, nil
}

// engineGate is the engine's gate: nil without rules.
func (g *planGate) engineGate() workspace.Gate {
	if g == nil {
		return nil
	}
	return g.judge
}

// judge is the workspace.Gate.
func (g *planGate) judge(in workspace.GateInput) workspace.GateVerdict {
	var v workspace.GateVerdict
	deny, approval, warnings := policy.Verdict(g.policy.Check(policyInput(in)))
	if deny != nil {
		v.Denied = deny.String()
		return v
	}
	if approval != nil {
		v.Approval = approval.String() + " (requires approval)"
	}
	for _, w := range warnings {
		v.Warnings = append(v.Warnings, w.String())
	}
	if d := g.windows.Check(g.now(), window.Change{Create: in.Create, Delete: in.Destroy}); !d.Open {
		v.Hold, v.HoldUntil = "not applied: "+d.Message(), d.Next
	}
	return v
}

// heldResult records a plan a closed change window holds: published (as
// review mode publishes), an Event and Programmed=False saying when the
// next window opens. It reports whether r was such a result.
func (l *loadBalancers) heldResult(svc *corev1.Service, ws string, r workspace.Result) bool {
	if !r.AwaitingApproval || r.Plan == nil || r.Verdict.Hold == "" {
		return false
	}
	if l.review != nil {
		l.review.publishHeld(svc, ws, r.Plan)
	}
	msg := heldMessage(r.Plan, r.Verdict)
	l.event(svc, corev1.EventTypeNormal, ReasonChangeWindowClosed, msg)
	l.conds.set(svc, condition(ConditionAccepted, true, CondReasonAccepted, "the template set accepts the Service's inputs"),
		condition(ConditionProgrammed, false, CondReasonChangeWindowClosed, msg))
	return true
}

func heldMessage(p *workspace.PendingPlan, v workspace.GateVerdict) string {
	msg := fmt.Sprintf("plan %s (%s) is published and %s", p.Hash, p.Summary(), v.Hold)
	if v.Approval != "" {
		msg += "; it also needs approval: " + v.Approval
	}
	return msg
}

// publishHeld publishes a held plan in its ConfigMap, as a plan awaiting
// approval is.
func (rv *reviewer) publishHeld(svc *corev1.Service, ws string, p *workspace.PendingPlan) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rv.publish(ctx, ws, svc, p); err != nil {
		klog.ErrorS(err, "Publish held plan", "service", klog.KObj(svc))
	}
}

// policyInput is what policy rules see of a gated plan.
func policyInput(in workspace.GateInput) policy.Input {
	kind := policy.KindLoadBalancer
	if in.Workspace == templates.RoutesWorkspaceName {
		kind = policy.KindRoutes
	}
	return policy.Input{Plan: in.Plan, Workspace: policy.Workspace{Name: in.Workspace, Kind: kind, Destroy: in.Destroy, Drift: in.Drift, Create: in.Create}}
}
