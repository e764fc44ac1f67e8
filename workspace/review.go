package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"
	"github.com/tfccm/tfccm/internal/secret"
)

// Review mode (Options.Review): a plan with changes is not applied. The
// engine keeps the saved plan file, publishes a redacted form of it and
// waits in PhaseAwaitingApproval until Approve is called with the plan's
// content hash; then it applies exactly that saved plan.

// Errors returned by Approve and Wait in review mode.
var (
	// ErrAwaitingApproval is returned by Wait while the workspace's plan
	// waits for Approve.
	ErrAwaitingApproval = errors.New("plan awaiting approval")
	// ErrNoPendingPlan: the workspace has no plan awaiting approval.
	ErrNoPendingPlan = errors.New("no plan awaiting approval")
	// ErrPlanMismatch: the approved hash is not the pending plan's (stale
	// or unknown); nothing is applied.
	ErrPlanMismatch = errors.New("approved plan hash does not match the pending plan")
	// ErrAlreadyApplied: the approved plan was applied already; approving
	// it again does nothing.
	ErrAlreadyApplied = errors.New("this plan was already approved and applied")
)

// Published plan files, inside the workspace's metadata dir.
const (
	planTextFile = metaDir + "/plan.txt"
	planJSONFile = metaDir + "/plan.json"
)

// PendingPlan is a saved plan waiting for approval.
type PendingPlan struct {
	// Hash is the sha256 (hex) of the saved plan file: an approval names
	// exactly this plan.
	Hash string
	// SpecHash is the workspace content hash the plan was made for.
	SpecHash string
	// Destroy is true for a destroy plan.
	Destroy bool
	// Drift is true for a drift repair: the applied content re-planned
	// because the infrastructure drifted from it.
	Drift bool
	// Replaces is the hash of the plan that awaited approval before new
	// inputs replaced it (that plan can no longer be approved), or "".
	Replaces string
	// Add, Change and Destroy count resource actions (a replacement counts
	// as one add and one destroy).
	Add, Change, Remove int
	// Text is `tofu show -no-color` of the plan (tofu redacts sensitive
	// values; tfccm's secrets are scrubbed too).
	Text string
	// JSON is a redacted JSON form: resource and output changes with every
	// value marked sensitive replaced by secret.Placeholder.
	JSON []byte
}

// Summary is the one-line form: "N to add, M to change, K to destroy",
// prefixed "drift repair: " for a drift repair.
func (p *PendingPlan) Summary() string {
	s := fmt.Sprintf("%d to add, %d to change, %d to destroy", p.Add, p.Change, p.Remove)
	if p.Drift {
		s = "drift repair (the infrastructure drifted from the applied plan): " + s
	}
	return s
}

// Approve applies the workspace's pending plan if planHash is its hash.
// Approving the plan being applied (or just applied) again is a no-op.
// A wrong hash is refused with ErrPlanMismatch and changes nothing; a
// workspace with no pending plan gives ErrNoPendingPlan.
func (e *Engine) Approve(name, planHash string) error {
	if !validName(name) {
		return fmt.Errorf("approve %s: invalid workspace name", name)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	en, ok := e.ws[name]
	if ok && planHash != "" && en.approved == planHash {
		return nil
	}
	if ok && planHash != "" && en.lastApproved == planHash && (en.pending == nil || en.pending.Hash != planHash) {
		return fmt.Errorf("approve %s: %w", name, ErrAlreadyApplied)
	}
	if !ok || en.pending == nil || en.status.Phase != PhaseAwaitingApproval {
		return fmt.Errorf("approve %s: %w", name, ErrNoPendingPlan)
	}
	if en.pending.Hash != planHash {
		return fmt.Errorf("approve %s: %w: got %q, pending %s", name, ErrPlanMismatch, planHash, en.pending.Hash)
	}
	en.approved = planHash
	e.setStatus(en, func(s *Status) { s.Phase = PhasePending })
	e.enqueue(name)
	return nil
}

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

// publishPlan hashes the saved plan, renders its published forms and
// writes them under the workspace's metadata dir.
func (r *runner) publishPlan(ctx context.Context, spec *Spec, destroy bool) (*PendingPlan, error) {
	hash, err := fileHash(filepath.Join(r.dir, planFile))
	if err != nil {
		return nil, &Error{Op: "plan", Summary: fmt.Sprintf("hash saved plan: %v", err)}
	}
	p := &PendingPlan{Hash: hash, SpecHash: spec.Hash, Destroy: destroy}
	var plan *tfjson.Plan
	if err := r.step(ctx, "show", func(ctx context.Context, tf *tfexec.Terraform) error {
		var err error
		plan, err = tf.ShowPlanFile(ctx, planFile)
		return err
	}); err != nil {
		return nil, err
	}
	// Marks alone do not suffice: a value marked sensitive in one place
	// can be copied unmarked elsewhere (terraform_data's `output` mirrors
	// its `input` without the marks once in state), and tofu prints such
	// copies in clear. Every string marked sensitive anywhere in the plan
	// is therefore scrubbed from the published text and JSON.
	scrub := r.scrub.With(sensitiveStrings(plan))
	var text string
	if err := r.step(ctx, "show", func(ctx context.Context, tf *tfexec.Terraform) error {
		var err error
		text, err = tf.ShowPlanFileRaw(ctx, planFile)
		return err
	}); err != nil {
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
		a := rc.Change.Actions
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

// applyApproved applies the saved plan, after checking it is byte for byte
// the one approved.
func (r *runner) applyApproved(ctx context.Context, p *PendingPlan) error {
	got, err := fileHash(filepath.Join(r.dir, planFile))
	if err != nil || got != p.Hash {
		return &Error{Op: "apply", Summary: fmt.Sprintf("the approved plan %s is no longer saved in the workspace; planning again", p.Hash)}
	}
	return r.step(ctx, "apply", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.Apply(ctx, tfexec.DirOrPlan(planFile), tfexec.LockTimeout("0s"))
	})
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
