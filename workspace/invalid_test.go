package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/workspace/tofu"
)

// TestInvalidInputIsNotRetried: a value the template's own validation (or
// a precondition) rejects fails once, is reported as invalid input and is
// not retried; the same spec submitted again runs nothing; a changed spec
// runs at once.
func TestInvalidInputIsNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name, module, want string
	}{
		{"variable validation", `variable "port" {
  type = number
  validation {
    condition     = var.port < 10
    error_message = "port must be below 10."
  }
}

resource "terraform_data" "x" {
  input = var.port
}
`, "port must be below 10"},
		{"precondition", `variable "port" {
  type = number
}

resource "terraform_data" "x" {
  input = var.port
  lifecycle {
    precondition {
      condition     = var.port < 10
      error_message = "UDP is not supported."
    }
  }
}
`, "UDP is not supported"},
		// tofu checks this rule while planning, after it printed the plan
		// (with its summary line): still the plan's failure.
		{"validation of a variable of any type", `variable "port" {
  type = any
  validation {
    condition     = alltrue([for p in [var.port] : p < 10])
    error_message = "ports must be below 10."
  }
}

resource "terraform_data" "x" {
  input = 1
}
`, "ports must be below 10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin, calls := countingBinary(t)
			e := newTestEngine(t, Options{Binary: bin, Backoff: Backoff{Initial: 50 * time.Millisecond, Max: 100 * time.Millisecond}})
			spec := Spec{Name: "inv", Files: map[string][]byte{"main.tf": []byte(tc.module), "tfccm.auto.tfvars": []byte("port = 53\n")}}
			spec.Hash = spec.ContentHash()
			if _, err := e.Apply(spec); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, err := e.Wait(ctx, "inv", spec.Hash)
			if err == nil || !tofu.IsInvalidInput(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want invalid input naming %q", err, tc.want)
			}
			if !st.NextRetry.IsZero() {
				t.Errorf("NextRetry = %v, want none", st.NextRetry)
			}
			time.Sleep(500 * time.Millisecond) // several backoff periods
			if _, err := e.Apply(spec); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			// The first apply plans itself: it failed while planning.
			if n := count(calls(), "plan") + count(calls(), "apply"); n != 1 {
				t.Errorf("%d plans of the same invalid inputs, want 1 (calls %q)", n, calls())
			}
			fixed := Spec{Name: "inv", Files: map[string][]byte{"main.tf": []byte(tc.module), "tfccm.auto.tfvars": []byte("port = 5\n")}}
			fixed.Hash = fixed.ContentHash()
			if _, err := e.Apply(fixed); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Wait(ctx, "inv", fixed.Hash); err != nil {
				t.Fatalf("fixed inputs: %v", err)
			}
		})
	}
}

// TestDestroyUsesLastAppliedConfiguration: inputs that became invalid
// after the last apply (here a variable's validation, which `tofu destroy`
// evaluates too) never block the destroy, which runs with the applied
// configuration; the one that failed is never applied.
func TestDestroyUsesLastAppliedConfiguration(t *testing.T) {
	const module = `variable "port" {
  type = number
  validation {
    condition     = var.port < 10
    error_message = "port must be below 10."
  }
}

resource "terraform_data" "x" {
  input = var.port
}
`
	e := newTestEngine(t, Options{Backoff: Backoff{Initial: 50 * time.Millisecond, Max: 100 * time.Millisecond}})
	spec := func(port string) Spec {
		s := Spec{Name: "later", Files: map[string][]byte{"main.tf": []byte(module), "tfccm.auto.tfvars": []byte("port = " + port + "\n")}}
		s.Hash = s.ContentHash()
		return s
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	good, bad := spec("5"), spec("53")
	for _, s := range []Spec{good, bad} {
		if _, err := e.Apply(s); err != nil {
			t.Fatal(err)
		}
		_, _ = e.Wait(ctx, s.Name, s.Hash)
	}
	if st := e.Status("later"); st.Phase != PhaseFailed || !tofu.IsInvalidInput(st.Err) || st.AppliedHash != good.Hash {
		t.Fatalf("after the invalid inputs: %+v, want failed as invalid input with the good spec applied", st)
	}
	if _, err := e.Destroy(bad); err != nil {
		t.Fatal(err)
	}
	if st, err := e.Wait(ctx, "later", bad.Hash); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy with inputs that became invalid: %v %+v", err, st)
	}
	if _, err := os.Stat(e.Dir("later")); !os.IsNotExist(err) {
		t.Errorf("workspace directory left after the destroy: %v", err)
	}
}

// TestSaveAppliedOnlyOnChange: the copy of the applied files is written
// when the applied content changes, not on every successful run (a drift
// check re-applies the same content).
func TestSaveAppliedOnlyOnChange(t *testing.T) {
	dir := t.TempDir()
	spec := func(v string) Spec {
		s := Spec{Name: "w", Files: map[string][]byte{"main.tf": []byte("# " + v + "\n")}}
		s.Hash = s.ContentHash()
		return s
	}
	a, b := spec("a"), spec("b")
	copyOf := filepath.Join(dir, appliedDir, "main.tf")
	for _, tc := range []struct {
		name     string
		spec     Spec
		prevHash string
		rewrite  bool
		want     string
	}{
		{"first apply", a, "", true, "# a\n"},
		{"same content again", a, a.Hash, false, "# a\n"},
		{"new content", b, a.Hash, true, "# b\n"},
	} {
		old := time.Now().Add(-time.Hour).Truncate(time.Second)
		_ = os.Chtimes(copyOf, old, old)
		if err := saveApplied(dir, &tc.spec, tc.prevHash); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := os.ReadFile(copyOf)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: copy %q, %v; want %q", tc.name, got, err, tc.want)
		}
		st, err := os.Stat(copyOf)
		if err != nil {
			t.Fatal(err)
		}
		if rewritten := !st.ModTime().Equal(old); rewritten != tc.rewrite {
			t.Errorf("%s: rewritten %v, want %v", tc.name, rewritten, tc.rewrite)
		}
	}
	// A missing copy is written even when the content did not change.
	if err := os.RemoveAll(filepath.Join(dir, appliedDir)); err != nil {
		t.Fatal(err)
	}
	if err := saveApplied(dir, &b, b.Hash); err != nil {
		t.Fatal(err)
	}
	if _, ok := lastApplied(dir, &b); !ok {
		t.Error("a missing copy was not written again")
	}
}
