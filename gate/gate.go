// Gate: policy rules then change windows over one plan, and the verdict.

package gate

import (
	"fmt"
	"time"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/gate/policy"
	"github.com/tfccm/tfccm/gate/window"
)

// Gate is the compiled policy rules and change windows of a cloud config.
type Gate struct {
	policy  *policy.Set
	windows *window.Schedule
	// Now is the clock the windows are read with.
	Now func() time.Time
}

// New compiles cfg's policies and change windows; nil when there is
// nothing to check (every plan passes at once; a nil Gate judges so).
func New(cfg *config.Config) (*Gate, error) {
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
	return &Gate{policy: set, windows: windows, Now: time.Now}, nil
}

// Input is one plan to judge.
type Input struct {
	// Plan is the redacted JSON plan as policy rules see it
	// (plans.PolicyDocument).
	Plan map[string]any
	// Workspace is the workspace's name; Kind the template contract's kind
	// of its module (templates.Kind: "loadbalancer", "routes" or "bgp").
	Workspace, Kind string
	// Create: nothing applied yet; Destroy: the Service was deleted;
	// Drift: the plan repairs drift.
	Create, Destroy, Drift bool
	// Imports counts the resources the plan imports (an adoption,
	// tfccm.io/adopt, when above zero).
	Imports int
}

// Verdict is what the gate says of a plan.
type Verdict struct {
	// Findings are every policy rule's verdict on the plan.
	Findings []policy.Finding
	// Denied is the denying rule's text ("" = not denied); nothing else
	// is judged then.
	Denied string
	// Approval is the rule's text when one requires approval.
	Approval string
	// Approved names the approve rule that lets the plan through review
	// mode without a person ("" = none; never with Denied or Approval).
	Approved string
	// Warnings are the warning rules' texts.
	Warnings []string
	// Hold says a closed change window holds the plan ("" = open), and
	// HoldUntil when the next window opens (zero: not known).
	Hold      string
	HoldUntil time.Time
}

// Judge runs the policy rules over in, then the change windows.
func (g *Gate) Judge(in Input) Verdict {
	var v Verdict
	if g == nil {
		return v
	}
	v.Findings = g.policy.Check(policy.Input{Plan: in.Plan, Workspace: policy.Workspace{Name: in.Workspace, Kind: in.Kind, Destroy: in.Destroy, Drift: in.Drift, Create: in.Create, Imports: in.Imports}})
	deny, approval, warnings := policy.Verdict(v.Findings)
	if deny != nil {
		v.Denied = deny.String()
		return v
	}
	if approval != nil {
		v.Approval = approval.String() + " (requires approval)"
	} else if rule := g.policy.Approver(v.Findings); rule != "" {
		v.Approved = "policy " + rule
	}
	for _, w := range warnings {
		v.Warnings = append(v.Warnings, w.String())
	}
	if d := g.windows.Check(g.Now(), window.Change{Create: in.Create, Delete: in.Destroy}); !d.Open {
		v.Hold, v.HoldUntil = "not applied: "+d.Message(), d.Next
	}
	return v
}
