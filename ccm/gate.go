package ccm

import (
	"fmt"
	"time"

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

// policyInput is what policy rules see of a gated plan.
func policyInput(in workspace.GateInput) policy.Input {
	kind := policy.KindLoadBalancer
	if in.Workspace == templates.RoutesWorkspaceName {
		kind = policy.KindRoutes
	}
	return policy.Input{Plan: in.Plan, Workspace: policy.Workspace{Name: in.Workspace, Kind: kind, Destroy: in.Destroy, Drift: in.Drift, Create: in.Create}}
}
