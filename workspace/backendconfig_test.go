package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestNamedStateWorkspace: a spec for a backend without a per-workspace key
// lives in its own Terraform workspace, and destroy deletes it.
func TestNamedStateWorkspace(t *testing.T) {
	work := t.TempDir()
	e := newTestEngine(t, Options{WorkDir: work})
	spec := testSpec("named", 4, 0)
	spec.StateWorkspace = "lb-named"
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	st := waitApplied(t, e, spec)
	if got := string(st.Outputs["value"]); got != "4" {
		t.Errorf("output value = %s, want 4", got)
	}
	state := filepath.Join(e.Dir("named"), "terraform.tfstate.d", "lb-named", "terraform.tfstate")
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("state not in the named workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.Dir("named"), "terraform.tfstate")); err == nil {
		t.Error("default workspace state written too")
	}
	if _, err := e.Destroy(spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st, err := e.Wait(ctx, "named", spec.ContentHash()); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy: %v %+v", err, st)
	}
}

// TestSecretBackendConfig: secret backend settings reach init but are
// never written into the workspace, and the -backend-config file is gone
// once init is done.
func TestSecretBackendConfig(t *testing.T) {
	work := t.TempDir()
	e := newTestEngine(t, Options{WorkDir: work})
	statePath := filepath.Join(t.TempDir(), "s3cr3t-state-location.tfstate")
	spec := testSpec("secret", 2, 0)
	spec.Files["backend.tf"] = []byte("terraform {\n  backend \"local\" {}\n}\n")
	spec.BackendConfig = map[string]string{"path": statePath}
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	st := waitApplied(t, e, spec)
	if got := string(st.Outputs["value"]); got != "2" {
		t.Errorf("output value = %s, want 2", got)
	}
	if _, err := os.Stat(statePath); err != nil {
		t.Fatalf("backend config did not reach init: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(work, ".secrets", "*")); len(left) != 0 {
		t.Errorf("backend config files left: %v", left)
	}
	// Nothing tfccm writes (rendered files, its record) holds the value.
	err := filepath.WalkDir(e.Dir("secret"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".terraform" {
			return filepath.SkipDir // tofu's own backend cache
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte("s3cr3t")) {
			t.Errorf("%s contains the secret backend setting", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A failure message never shows it either.
	bad := testSpec("secret-bad", 1, 0)
	bad.Files["backend.tf"] = []byte("terraform {\n  backend \"local\" {}\n}\n")
	bad.BackendConfig = map[string]string{"path": "s3cr3t-path", "no_such_setting": "s3cr3t-value"}
	if _, err := e.Apply(bad); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err = e.Wait(ctx, bad.Name, bad.ContentHash())
	if err == nil {
		t.Fatalf("bad backend config applied: %+v", st)
	}
	msg, _ := json.Marshal(err.Error())
	if bytes.Contains(msg, []byte("s3cr3t")) {
		t.Errorf("error shows the secret: %s", msg)
	}
	if !bytes.Contains(msg, []byte("no_such_setting")) {
		t.Errorf("error does not name the bad setting: %s", msg)
	}
}
