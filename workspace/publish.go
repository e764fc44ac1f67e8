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

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
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
func (r *runner) publishPlan(ctx context.Context, spec *Spec, destroy bool) (*plans.PendingPlan, error) {
	hash, err := fileHash(filepath.Join(r.Dir, planFile))
	if err != nil {
		return nil, &tofu.Error{Op: "plan", Summary: fmt.Sprintf("hash saved plan: %v", err)}
	}
	p := &plans.PendingPlan{Hash: hash, SpecHash: spec.Hash, Destroy: destroy}
	plan, err := tofu.StepResult(ctx, r.Runner, "show", func(ctx context.Context, tf *tfexec.Terraform) (*tfjson.Plan, error) {
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
	scrub := r.Scrub.With(plans.SensitiveStrings(plan))
	text, err := tofu.StepResult(ctx, r.Runner, "show", func(ctx context.Context, tf *tfexec.Terraform) (string, error) {
		return tf.ShowPlanFileRaw(ctx, planFile)
	})
	if err != nil {
		return nil, err
	}
	p.Text = scrub.Scrub(text)
	pub := plans.Redact(plan, p)
	pub.PlanHash = hash
	pub.Summary = p.Summary()
	b, err := json.MarshalIndent(pub, "", "  ")
	if err != nil {
		return nil, &tofu.Error{Op: "plan", Summary: fmt.Sprintf("publish plan: %v", err)}
	}
	p.JSON = []byte(scrub.Scrub(string(b)))
	for path, data := range map[string][]byte{planTextFile: []byte(p.Text), planJSONFile: p.JSON} {
		if err := os.WriteFile(filepath.Join(r.Dir, path), data, 0o600); err != nil {
			return nil, &tofu.Error{Op: "plan", Summary: fmt.Sprintf("publish plan: %v", err)}
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

// planSummary is the saved plan's one-line summary ("2 to add, 1 to
// change, 0 to destroy"), for the Event that says an apply starts: from
// the line the plan printed, else (a plan that changes only outputs
// prints none) from `tofu show`.
func (r *runner) planSummary(ctx context.Context) (string, error) {
	if s, ok := r.planLine.Summary(); ok {
		return s, nil
	}
	plan, err := tofu.StepResult(ctx, r.Runner, "show", func(ctx context.Context, tf *tfexec.Terraform) (*tfjson.Plan, error) {
		return tf.ShowPlanFile(ctx, planFile)
	})
	if err != nil {
		return "", err
	}
	var p plans.PendingPlan
	for _, rc := range plan.ResourceChanges {
		if rc != nil && rc.Change != nil {
			p.Count(rc.Change.Actions)
		}
	}
	return p.Summary(), nil
}
