package localcloud

import (
	"context"
	"path/filepath"
)

// health plans the health module (templates.HealthDir) of the local set's
// module with the workspace's inputs, as tfccm's health loop does, and
// returns its `backends` output: node name → healthy.
func (w *workspace) health(module string) map[string]bool {
	w.t.Helper()
	got, err := ProbeHealth(context.Background(), shared.Tofu, filepath.Join(shared.RepoRoot, "templates", "local", module, "health"),
		filepath.Join(w.dir, "health"), filepath.Join(w.dir, "tfccm.auto.tfvars.json"))
	if err != nil {
		w.t.Fatal(err)
	}
	return got
}
