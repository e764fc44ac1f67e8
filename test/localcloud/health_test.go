package localcloud

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
)

// health plans the health module (templates.HealthDir) of the local set's
// module with the workspace's inputs, as tfccm's health loop does, and
// returns its `backends` output: node name → healthy.
func (w *workspace) health(module string) map[string]bool {
	w.t.Helper()
	dir := filepath.Join(w.dir, "health")
	ctx := context.Background()
	if _, err := os.Stat(filepath.Join(dir, ".terraform")); err != nil {
		if err := CopyModule(filepath.Join(shared.RepoRoot, "templates", "local", module, "health"), dir); err != nil {
			w.t.Fatal(err)
		}
		if _, err := RunTofu(ctx, shared.Tofu, dir, "init", "-input=false", "-no-color"); err != nil {
			w.t.Fatal(err)
		}
	}
	if _, err := RunTofu(ctx, shared.Tofu, dir, "plan", "-input=false", "-no-color", "-lock=false", "-var-file=../tfccm.auto.tfvars.json", "-out=probe.plan"); err != nil {
		w.t.Fatal(err)
	}
	out, err := RunTofu(ctx, shared.Tofu, dir, "show", "-json", "probe.plan")
	if err != nil {
		w.t.Fatal(err)
	}
	var plan struct {
		PlannedValues struct {
			Outputs map[string]struct {
				Value []struct {
					Node    string `json:"node"`
					Healthy bool   `json:"healthy"`
				} `json:"value"`
			} `json:"outputs"`
		} `json:"planned_values"`
	}
	if err := json.Unmarshal(out, &plan); err != nil {
		w.t.Fatal(err)
	}
	got := map[string]bool{}
	for _, b := range plan.PlannedValues.Outputs["backends"].Value {
		got[b.Node] = b.Healthy
	}
	return got
}
