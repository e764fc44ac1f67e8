package localcloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/testkit"
)

// shared is the cloud every test in this package uses (one per test binary).
var shared *Cloud

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	work, err := os.MkdirTemp("", "localcloud-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(work)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nodes := DefaultNodes()
	nodes[1].IPv6 = false // node-b is IPv4-only
	shared, err = Up(ctx, Options{Prefix: fmt.Sprintf("lc%05x", os.Getpid()&0xfffff), Nodes: nodes, WorkDir: work})
	if err != nil {
		fmt.Fprintln(os.Stderr, "local cloud up:", err)
		return 1
	}
	code := m.Run()
	if err := shared.Down(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "local cloud down:", err)
		return 1
	}
	return code
}

// workspace is a copy of one template module applied with raw tofu and a
// tfvars file the test writes, the way tfccm's renderer would.
type workspace struct {
	t   *testing.T
	dir string
	// good is the last tfvars that applied; a failed apply restores it,
	// as tfccm never keeps inputs it could not apply.
	good []byte
}

func newWorkspace(t *testing.T, module string) *workspace {
	t.Helper()
	if shared.RepoRoot == "" {
		t.Fatal("repository root not found")
	}
	w := &workspace{t: t, dir: t.TempDir()}
	if err := CopyModule(filepath.Join(shared.RepoRoot, "templates", "local", module), w.dir); err != nil {
		t.Fatal(err)
	}
	if _, err := RunTofu(context.Background(), shared.Tofu, w.dir, "init", "-input=false", "-no-color"); err != nil {
		t.Fatal(err)
	}
	return w
}

// apply writes vars as tfccm.auto.tfvars.json and applies.
func (w *workspace) apply(vars map[string]any) error {
	w.t.Helper()
	b, err := json.MarshalIndent(vars, "", "  ")
	if err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "tfccm.auto.tfvars.json"), b, 0o600); err != nil {
		w.t.Fatal(err)
	}
	_, err = RunTofu(context.Background(), shared.Tofu, w.dir, "apply", "-auto-approve", "-input=false", "-no-color")
	if err != nil {
		if w.good != nil {
			_ = os.WriteFile(filepath.Join(w.dir, "tfccm.auto.tfvars.json"), w.good, 0o600)
		} else {
			_ = os.Remove(filepath.Join(w.dir, "tfccm.auto.tfvars.json"))
		}
		return err
	}
	w.good = b
	return nil
}

func (w *workspace) mustApply(vars map[string]any) {
	w.t.Helper()
	if err := w.apply(vars); err != nil {
		w.t.Fatal(err)
	}
}

func (w *workspace) destroy() error {
	_, err := RunTofu(context.Background(), shared.Tofu, w.dir, "destroy", "-auto-approve", "-input=false", "-no-color")
	return err
}

// destroyOnCleanup destroys the workspace when the test ends (a no-op if
// the test already destroyed it).
func (w *workspace) destroyOnCleanup() {
	w.t.Cleanup(func() {
		if err := w.destroy(); err != nil {
			w.t.Errorf("destroy %s: %v", w.dir, err)
		}
	})
}

func (w *workspace) output(name string, v any) {
	w.t.Helper()
	out, err := RunTofu(context.Background(), shared.Tofu, w.dir, "output", "-json", name)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		w.t.Fatalf("output %s: %v: %s", name, err, out)
	}
}

// eventually polls cond (testkit.Eventually) until it holds or timeout
// passes, then fails the test with cond's last state.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	testkit.Eventually(t, timeout, what, func(context.Context) error {
		if ok, state := cond(); !ok {
			return errors.New("last state: " + state)
		}
		return nil
	})
}

// errContains reports whether err's text, with line wrapping undone,
// contains want.
func errContains(err error, want string) bool {
	return err != nil && strings.Contains(strings.Join(strings.Fields(err.Error()), " "), want)
}
