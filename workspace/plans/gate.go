package plans

// The gate's input and verdict (policy and change windows judge every
// plan with changes), and the plan as policy rules see it.

import (
	"encoding/json"
	"fmt"
	"time"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/tfccm/tfccm/internal/secret"
)

// GateInput is what the gate judges.
type GateInput struct {
	// Workspace is the workspace's name.
	Workspace string
	// Destroy, Drift and Create say what the plan is for: a destroy, a
	// drift repair, or the first apply of the workspace (nothing applied
	// yet).
	Destroy, Drift, Create bool
	// Imports counts the resources the plan imports: an adoption
	// (tfccm.io/adopt) when above zero.
	Imports int
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
	// Approved, when set, names the policy rule that approves the plan in
	// review mode: it is applied without a person's approval (an
	// Approval or a Hold still holds it).
	Approved string
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
		Change       PublishedValue `json:"change"`
	}
	doc := struct {
		ResourceChanges []resourceChange          `json:"resource_changes"`
		OutputChanges   map[string]PublishedValue `json:"output_changes"`
	}{ResourceChanges: []resourceChange{}, OutputChanges: map[string]PublishedValue{}}
	for _, rc := range plan.ResourceChanges {
		if rc == nil || rc.Change == nil {
			continue
		}
		doc.ResourceChanges = append(doc.ResourceChanges, resourceChange{
			Address: rc.Address, Type: rc.Type, Name: rc.Name, Mode: string(rc.Mode), ProviderName: rc.ProviderName,
			Change: RedactChange(rc.Change),
		})
	}
	for n, c := range plan.OutputChanges {
		if c != nil {
			doc.OutputChanges[n] = RedactChange(c)
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("policy document: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(scrub.With(SensitiveStrings(plan)).Scrub(string(b))), &out); err != nil {
		return nil, fmt.Errorf("policy document: %w", err)
	}
	return out, nil
}
