package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"
	"github.com/tfccm/tfccm/internal/secret"
)

// Publication of a saved plan in review mode: its hash, its text and a
// redacted JSON form under .tfccm (paths.go).

// fileHash is the hex sha256 of a file's content.
func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// contentHash is the hex sha256 of b (fileHash of a file holding b).
func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// publishPlan hashes the saved plan, renders its published forms and
// writes them under the workspace's metadata dir.
func (r *runner) publishPlan(ctx context.Context, spec *Spec, destroy bool) (*PendingPlan, error) {
	hash, err := fileHash(filepath.Join(r.dir, planFile))
	if err != nil {
		return nil, &Error{Op: "plan", Summary: fmt.Sprintf("hash saved plan: %v", err)}
	}
	p := &PendingPlan{Hash: hash, SpecHash: spec.Hash, Destroy: destroy}
	plan, err := stepResult(ctx, r, "show", func(ctx context.Context, tf *tfexec.Terraform) (*tfjson.Plan, error) {
		return tf.ShowPlanFile(ctx, planFile)
	})
	if err != nil {
		return nil, err
	}
	// Marks alone do not suffice: a value marked sensitive in one place
	// can be copied unmarked elsewhere (terraform_data's `output` mirrors
	// its `input` without the marks once in state), and tofu prints such
	// copies in clear. Every string marked sensitive anywhere in the plan
	// is therefore scrubbed from the published text and JSON.
	scrub := r.scrub.With(sensitiveStrings(plan))
	text, err := stepResult(ctx, r, "show", func(ctx context.Context, tf *tfexec.Terraform) (string, error) {
		return tf.ShowPlanFileRaw(ctx, planFile)
	})
	if err != nil {
		return nil, err
	}
	p.Text = scrub.Scrub(text)
	pub := redactPlan(plan, p)
	pub.PlanHash = hash
	pub.Summary = p.Summary()
	b, err := json.MarshalIndent(pub, "", "  ")
	if err != nil {
		return nil, &Error{Op: "plan", Summary: fmt.Sprintf("publish plan: %v", err)}
	}
	p.JSON = []byte(scrub.Scrub(string(b)))
	for path, data := range map[string][]byte{planTextFile: []byte(p.Text), planJSONFile: p.JSON} {
		if err := os.WriteFile(filepath.Join(r.dir, path), data, 0o600); err != nil {
			return nil, &Error{Op: "plan", Summary: fmt.Sprintf("publish plan: %v", err)}
		}
	}
	return p, nil
}

// removePublished deletes the saved plan and its published forms.
func removePublished(dir string) {
	for _, f := range []string{planFile, planTextFile, planJSONFile} {
		_ = os.Remove(filepath.Join(dir, f))
	}
}

// publishedPlan is the redacted JSON form of a plan.
type publishedPlan struct {
	PlanHash        string                    `json:"plan_hash"`
	Summary         string                    `json:"summary"`
	ResourceChanges []publishedResourceChange `json:"resource_changes"`
	OutputChanges   map[string]publishedValue `json:"output_changes"`
}

type publishedResourceChange struct {
	Address string `json:"address"`
	publishedValue
}

type publishedValue struct {
	Actions      []string `json:"actions"`
	Before       any      `json:"before"`
	After        any      `json:"after"`
	AfterUnknown any      `json:"after_unknown,omitempty"`
}

// redactPlan builds the published form of plan and counts its actions into
// p. Only changes are published (not the configuration, variables or prior
// state, which can hold values in clear); every value marked sensitive in
// before_sensitive/after_sensitive is replaced, and a value whose
// sensitivity cannot be read is replaced whole.
func redactPlan(plan *tfjson.Plan, p *PendingPlan) publishedPlan {
	pub := publishedPlan{ResourceChanges: []publishedResourceChange{}, OutputChanges: map[string]publishedValue{}}
	for _, rc := range plan.ResourceChanges {
		if rc == nil || rc.Change == nil {
			continue
		}
		if !p.count(rc.Change.Actions) {
			continue // no-op and read
		}
		pub.ResourceChanges = append(pub.ResourceChanges, publishedResourceChange{Address: rc.Address, publishedValue: redactChange(rc.Change)})
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
		pub.OutputChanges[n] = redactChange(c)
	}
	return pub
}

// count adds one resource's actions to p's counts; false for a no-op or a
// read.
func (p *PendingPlan) count(a tfjson.Actions) bool {
	switch {
	case a.Replace():
		p.Add++
		p.Remove++
	case a.Create():
		p.Add++
	case a.Update():
		p.Change++
	case a.Delete():
		p.Remove++
	default:
		return false
	}
	return true
}

// planSummary is the saved plan's one-line summary ("2 to add, 1 to
// change, 0 to destroy"), for the Event that says an apply starts: from
// the line the plan printed, else (a plan that changes only outputs
// prints none) from `tofu show`.
func (r *runner) planSummary(ctx context.Context) (string, error) {
	if s, ok := r.planLine.summary(); ok {
		return s, nil
	}
	plan, err := stepResult(ctx, r, "show", func(ctx context.Context, tf *tfexec.Terraform) (*tfjson.Plan, error) {
		return tf.ShowPlanFile(ctx, planFile)
	})
	if err != nil {
		return "", err
	}
	var p PendingPlan
	for _, rc := range plan.ResourceChanges {
		if rc != nil && rc.Change != nil {
			p.count(rc.Change.Actions)
		}
	}
	return p.Summary(), nil
}

func redactChange(c *tfjson.Change) publishedValue {
	actions := make([]string, len(c.Actions))
	for i, a := range c.Actions {
		actions[i] = string(a)
	}
	return publishedValue{
		Actions:      actions,
		Before:       secret.Redact(c.Before, c.BeforeSensitive),
		After:        secret.Redact(c.After, c.AfterSensitive),
		AfterUnknown: c.AfterUnknown,
	}
}

// sensitiveStrings returns every string value the plan marks sensitive:
// in resource changes, output changes, planned values, prior state and
// sensitive root variables.
func sensitiveStrings(plan *tfjson.Plan) []string {
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
