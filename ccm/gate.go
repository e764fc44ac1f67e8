// The engine's gate (package gate adapted to workspace.Gate) and the
// Events and conditions of a plan a closed change window holds.

package ccm

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/gate"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// planGate is the engine's one gate (workspace.Options.Gate): package
// gate (policy rules, then change windows) adapted to the engine's types.
type planGate struct {
	gate *gate.Gate
}

var _ workspace.Gate = (*planGate)(nil).judge

// newGate compiles the config's policies and change windows; nil when
// there is nothing to check (every plan passes at once).
func newGate(cfg *config.Config) (*planGate, error) {
	g, err := gate.New(cfg)
	if err != nil || g == nil {
		return nil, err
	}
	return &planGate{gate: g}, nil
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
	kind := templates.KindLoadBalancer
	if in.Workspace == templates.RoutesWorkspaceName {
		kind = templates.KindRoutes
	}
	v := g.gate.Judge(gate.Input{Plan: in.Plan, Workspace: in.Workspace, Kind: string(kind), Create: in.Create, Destroy: in.Destroy, Drift: in.Drift})
	return workspace.GateVerdict{Denied: v.Denied, Approval: v.Approval, Warnings: v.Warnings, Hold: v.Hold, HoldUntil: v.HoldUntil}
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
