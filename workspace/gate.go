package workspace

import (
	"context"
	"errors"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// The gate: every plan with changes is judged (Options.Gate: the policy
// and the change windows) after it is made and before it is applied or
// published, in planOrPublish, the one place plans go through.

// gate has g judge the saved plan (Options.Gate); without a gate every
// plan passes.
// An adopting workspace's plan (Spec.Adopts) is read even without a gate:
// a plan that would destroy or replace what it imports is refused here.
func (r *runner) gate(ctx context.Context, g plans.Gate, spec *Spec, destroy bool) (plans.GateVerdict, error) {
	if g == nil && !(spec.Adopts && !destroy) {
		return plans.GateVerdict{}, nil
	}
	plan, err := tofu.StepResult(ctx, r.Runner, "show", func(ctx context.Context, tf *tfexec.Terraform) (*tfjson.Plan, error) {
		return tf.ShowPlanFile(ctx, planFile)
	})
	if err != nil {
		return plans.GateVerdict{}, err
	}
	if err := plans.CheckAdoption(plan); err != nil {
		return plans.GateVerdict{Denied: err.Error()}, nil
	}
	if g == nil {
		return plans.GateVerdict{}, nil
	}
	doc, err := plans.PolicyDocument(plan, r.Scrub)
	if err != nil {
		return plans.GateVerdict{}, &tofu.Error{Op: "plan", Summary: err.Error()}
	}
	classifyBackends(doc, plan, r.Dir)
	in := plans.GateInput{Workspace: spec.Name, Destroy: destroy, Drift: r.drift, Create: !destroy && r.created, Plan: doc,
		Imports: len(plans.Imports(plan))}
	return g(in), nil
}

// IsDenied reports whether err is a plan the gate denied (Error.Denied):
// like invalid inputs, it is not retried until the work changes.
func IsDenied(err error) bool {
	var e *tofu.Error
	return errors.As(err, &e) && e.Denied
}
