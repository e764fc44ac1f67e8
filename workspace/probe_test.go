package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// probeModule reads the workspace's inputs and outputs a value from them;
// it declares only n of the inputs (sleep is left undeclared).
const probeModule = `variable "n" {
  type = number
}

output "twice" {
  value = var.n * 2
}

# A managed resource a probe must never create: a probe is a refresh, not
# an apply of the configuration.
resource "terraform_data" "never" {
  provisioner "local-exec" {
    command = "touch applied-by-probe"
  }
}
`

// TestProbe: a workspace's read-only module is refreshed with the
// workspace's own inputs, its outputs returned, nothing applied (not even
// the managed resource it declares) and no state left behind; a workspace without the module says so.
func TestProbe(t *testing.T) {
	e := newTestEngine(t, Options{})
	spec := testSpec("probed", 21, 0)
	spec.Files["health/main.tf"] = []byte(probeModule)
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, spec)
	for range 2 { // init on the first probe only
		out, err := e.Probe(context.Background(), "probed", "health", "tfccm.auto.tfvars")
		if err != nil {
			t.Fatal(err)
		}
		if string(out["twice"]) != "42" {
			t.Errorf("outputs %v, want twice = 42", out)
		}
	}
	// The workspace directory is untouched: the probe works in a copy.
	if got, want := listTree(t, filepath.Join(e.Dir("probed"), "health")), []string{"main.tf"}; !slices.Equal(got, want) {
		t.Errorf("the workspace's health/ holds %v after probes, want %v", got, want)
	}
	copyDir := filepath.Join(e.opts.WorkDir, probesDir, "probed", "health")
	// The inputs are a copy, not a link out of the copy (with runner
	// Jobs the copy travels to a runner pod, and no link out of a
	// workspace travels), and follow the workspace's.
	if st, err := os.Lstat(filepath.Join(copyDir, "tfccm.auto.tfvars")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("the probe's inputs: %v, %v; want a regular file", st, err)
	}
	changed := testSpec("probed", 22, 0)
	changed.Files["health/main.tf"] = []byte(probeModule)
	if _, err := e.Apply(changed); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, changed)
	if out, err := e.Probe(context.Background(), "probed", "health", "tfccm.auto.tfvars"); err != nil || string(out["twice"]) != "44" {
		t.Errorf("after the inputs changed: outputs %v, %v; want twice = 44", out, err)
	}
	for _, f := range []string{"terraform.tfstate", "terraform.tfstate.backup", "applied-by-probe"} {
		if _, err := os.Stat(filepath.Join(copyDir, f)); err == nil {
			t.Errorf("the probe left %s behind", f)
		}
	}
	if _, err := e.Probe(context.Background(), "probed", "absent", ""); !errors.Is(err, ErrNoProbe) {
		t.Errorf("probe of a missing module: %v, want ErrNoProbe", err)
	}

	// The module removed by a new spec: its directory stays (tofu's
	// .terraform), the module is gone.
	delete(spec.Files, "health/main.tf")
	spec.Hash = ""
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, spec)
	if _, err := e.Probe(context.Background(), "probed", "health", "tfccm.auto.tfvars"); !errors.Is(err, ErrNoProbe) {
		t.Errorf("probe of a removed module: %v, want ErrNoProbe", err)
	}
	if _, err := os.Stat(copyDir); err == nil {
		t.Error("the removed module's copy is left")
	}

	// Destroyed: its copies go with it.
	spec.Files["health/main.tf"] = []byte(probeModule)
	spec.Hash = ""
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, spec)
	if _, err := e.Probe(context.Background(), "probed", "health", "tfccm.auto.tfvars"); err != nil {
		t.Fatal(err)
	}
	spec.Hash = spec.ContentHash()
	if _, err := e.Destroy(spec); err != nil {
		t.Fatal(err)
	}
	if st, err := e.Wait(context.Background(), "probed", spec.Hash); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy: %v, %+v", err, st)
	}
	if _, err := os.Stat(filepath.Join(e.opts.WorkDir, probesDir, "probed")); err == nil {
		t.Error("the destroyed workspace's probe copies are left")
	}
}

// listTree lists the paths under dir, sorted.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
