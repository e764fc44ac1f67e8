// The engine's gate: package gate adapted to plans.Gate (the Events
// and conditions of a held plan are the load-balancer controller's).

package ccm

import (
	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/gate"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace/plans"
)

// planGate is the engine's one gate (workspace.Options.Gate): package
// gate (policy rules, then change windows) adapted to the engine's types.
type planGate struct {
	gate *gate.Gate
}

var _ plans.Gate = (*planGate)(nil).judge

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
func (g *planGate) engineGate() plans.Gate {
	if g == nil {
		return nil
	}
	return g.judge
}

// judge is the plans.Gate.
func (g *planGate) judge(in plans.GateInput) plans.GateVerdict {
	kind := templates.KindLoadBalancer
	if templates.IsClusterWorkspace(in.Workspace) {
		kind = templates.ClusterWorkspaceKind(in.Workspace)
	}
	v := g.gate.Judge(gate.Input{Plan: in.Plan, Workspace: in.Workspace, Kind: string(kind), Create: in.Create, Destroy: in.Destroy, Drift: in.Drift, Imports: in.Imports})
	return plans.GateVerdict{Denied: v.Denied, Approval: v.Approval, Approved: v.Approved, Warnings: v.Warnings, Hold: v.Hold, HoldUntil: v.HoldUntil}
}
