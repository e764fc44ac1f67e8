package provider

import (
	"fmt"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/policy"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// planGate is the engine's one gate (workspace.Options.Gate): the cloud
// config's policy rules over every plan with changes.
type planGate struct {
	policy *policy.Set
}

// newGate compiles the config's policies; nil when there is nothing to
// check (every plan passes).
func newGate(cfg *config.Config) (*planGate, error) {
	set, err := policy.Compile(cfg.Policies)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if set.Empty() {
		return nil, nil
	}
	return &planGate{policy: set}, nil
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
