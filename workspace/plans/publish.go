package plans

// A plan's published form: its resource and output changes with every
// sensitive value redacted, and the sensitive strings to scrub.

import (
	"encoding/json"
	"sort"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/tfccm/tfccm/internal/secret"
)

// Published is the redacted JSON form of a plan.
type Published struct {
	PlanHash        string                    `json:"plan_hash"`
	Summary         string                    `json:"summary"`
	ResourceChanges []PublishedChange         `json:"resource_changes"`
	OutputChanges   map[string]PublishedValue `json:"output_changes"`
}

type PublishedChange struct {
	Address string `json:"address"`
	PublishedValue
}

type PublishedValue struct {
	Actions      []string `json:"actions"`
	Before       any      `json:"before"`
	After        any      `json:"after"`
	AfterUnknown any      `json:"after_unknown,omitempty"`
	// Importing is set when the plan imports the resource (adoption): the
	// id it is imported by.
	Importing *PublishedImport `json:"importing,omitempty"`
}

// PublishedImport is what a plan says of a resource it imports.
type PublishedImport struct {
	ID string `json:"id"`
}

// Redact builds the published form of plan and counts its actions into
// p. Only changes are published (not the configuration, variables or prior
// state, which can hold values in clear); every value marked sensitive in
// before_sensitive/after_sensitive is replaced, and a value whose
// sensitivity cannot be read is replaced whole.
func Redact(plan *tfjson.Plan, p *PendingPlan) Published {
	pub := Published{ResourceChanges: []PublishedChange{}, OutputChanges: map[string]PublishedValue{}}
	for _, rc := range plan.ResourceChanges {
		if rc == nil || rc.Change == nil {
			continue
		}
		if !p.CountChange(rc.Change) {
			continue // no-op and read
		}
		pub.ResourceChanges = append(pub.ResourceChanges, PublishedChange{Address: rc.Address, PublishedValue: RedactChange(rc.Change)})
	}
	names := make([]string, 0, len(plan.OutputChanges))
	for n := range plan.OutputChanges {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := plan.OutputChanges[n]
		if c == nil || c.Actions.NoOp() {
			continue
		}
		pub.OutputChanges[n] = RedactChange(c)
	}
	return pub
}

func RedactChange(c *tfjson.Change) PublishedValue {
	actions := make([]string, len(c.Actions))
	for i, a := range c.Actions {
		actions[i] = string(a)
	}
	return PublishedValue{
		Actions:      actions,
		Before:       secret.Redact(c.Before, c.BeforeSensitive),
		After:        secret.Redact(c.After, c.AfterSensitive),
		AfterUnknown: c.AfterUnknown,
		Importing:    publishedImport(c.Importing),
	}
}

// SensitiveStrings returns every string value the plan marks sensitive:
// in resource changes, output changes, planned values, prior state and
// sensitive root variables.
func SensitiveStrings(plan *tfjson.Plan) []string {
	var out []string
	add := func(v, mask any) { secret.Collect(v, mask, &out) }
	for _, rc := range plan.ResourceChanges {
		if rc != nil && rc.Change != nil {
			add(rc.Change.Before, rc.Change.BeforeSensitive)
			add(rc.Change.After, rc.Change.AfterSensitive)
		}
	}
	for _, c := range plan.OutputChanges {
		if c != nil {
			add(c.Before, c.BeforeSensitive)
			add(c.After, c.AfterSensitive)
		}
	}
	for _, vals := range []*tfjson.StateValues{plan.PlannedValues, stateValues(plan.PriorState)} {
		if vals == nil {
			continue
		}
		for _, o := range vals.Outputs {
			if o != nil && o.Sensitive {
				add(o.Value, true)
			}
		}
		collectModule(vals.RootModule, &out)
	}
	if plan.Config != nil && plan.Config.RootModule != nil {
		for name, v := range plan.Config.RootModule.Variables {
			if v != nil && v.Sensitive && plan.Variables[name] != nil {
				add(plan.Variables[name].Value, true)
			}
		}
	}
	return out
}

func stateValues(s *tfjson.State) *tfjson.StateValues {
	if s == nil {
		return nil
	}
	return s.Values
}

func collectModule(m *tfjson.StateModule, out *[]string) {
	if m == nil {
		return
	}
	for _, r := range m.Resources {
		if r == nil || len(r.SensitiveValues) == 0 {
			continue
		}
		var mask any
		if json.Unmarshal(r.SensitiveValues, &mask) != nil {
			continue
		}
		vals := make(map[string]any, len(r.AttributeValues))
		for k, v := range r.AttributeValues {
			vals[k] = v
		}
		secret.Collect(vals, mask, out)
	}
	for _, c := range m.ChildModules {
		collectModule(c, out)
	}
}
