package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/tfccm/tfccm/internal/secret"
)

// The gate: every plan with changes is judged (Options.Gate: the policy
// and the change windows) after it is made and before it is applied or
// published, in planOrPublish, the one place plans go through.

// GateInput is what the gate judges.
type GateInput struct {
	// Workspace is the workspace's name.
	Workspace string
	// Destroy, Drift and Create say what the plan is for: a destroy, a
	// drift repair, or the first apply of the workspace (nothing applied
	// yet).
	Destroy, Drift, Create bool
	// Plan is the plan in policy form (PolicyDocument): sensitive values
	// redacted.
	Plan map[string]any
}

// GateVerdict is the gate's answer.
type GateVerdict struct {
	// Denied, when set, refuses the plan: nothing is applied, and the
	// message (naming the rule) is the workspace's error.
	Denied string
	// Approval, when set, holds the plan for approval as in review mode;
	// it says why (the rule).
	Approval string
	// Hold, when set, keeps the plan published but unapplied until
	// HoldUntil (a closed change window; zero: no known end, as a freeze);
	// it says why.
	Hold      string
	HoldUntil time.Time
	// Warnings are reported with the result (Result.Warnings); the plan is
	// applied.
	Warnings []string
}

// Gate judges a plan with changes.
type Gate func(GateInput) GateVerdict

// PolicyDocument is the plan as policy rules see it: tofu's JSON plan
// reduced to resource_changes (address, type, name, mode, provider_name,
// change) and output_changes, every value marked sensitive (and every
// copy of one) redacted, decoded into plain Go values.
func PolicyDocument(plan *tfjson.Plan, scrub *secret.Scrubber) (map[string]any, error) {
	type resourceChange struct {
		Address      string         `json:"address"`
		Type         string         `json:"type"`
		Name         string         `json:"name"`
		Mode         string         `json:"mode"`
		ProviderName string         `json:"provider_name"`
		Change       publishedValue `json:"change"`
	}
	doc := struct {
		ResourceChanges []resourceChange          `json:"resource_changes"`
		OutputChanges   map[string]publishedValue `json:"output_changes"`
	}{ResourceChanges: []resourceChange{}, OutputChanges: map[string]publishedValue{}}
	for _, rc := range plan.ResourceChanges {
		if rc == nil || rc.Change == nil {
			continue
		}
		doc.ResourceChanges = append(doc.ResourceChanges, resourceChange{
			Address: rc.Address, Type: rc.Type, Name: rc.Name, Mode: string(rc.Mode), ProviderName: rc.ProviderName,
			Change: redactChange(rc.Change),
		})
	}
	for n, c := range plan.OutputChanges {
		if c != nil {
			doc.OutputChanges[n] = redactChange(c)
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("policy document: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(scrub.With(sensitiveStrings(plan)).Scrub(string(b))), &out); err != nil {
		return nil, fmt.Errorf("policy document: %w", err)
	}
	return out, nil
}

// gate judges the saved plan (Options.Gate); without a gate every plan
// passes.
func (e *Engine) gate(ctx context.Context, r *runner, spec *Spec, destroy bool) (GateVerdict, error) {
	if e.opts.Gate == nil {
		return GateVerdict{}, nil
	}
	plan, err := stepResult(ctx, r, "show", func(ctx context.Context, tf *tfexec.Terraform) (*tfjson.Plan, error) {
		return tf.ShowPlanFile(ctx, planFile)
	})
	if err != nil {
		return GateVerdict{}, err
	}
	doc, err := PolicyDocument(plan, r.scrub)
	if err != nil {
		return GateVerdict{}, &Error{Op: "plan", Summary: err.Error()}
	}
	in := GateInput{Workspace: spec.Name, Destroy: destroy, Drift: r.drift, Create: !destroy && r.created, Plan: doc}
	return e.opts.Gate(in), nil
}

// IsDenied reports whether err is a plan the gate denied (Error.Denied):
// like invalid inputs, it is not retried until the work changes.
func IsDenied(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Denied
}
