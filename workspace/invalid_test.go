package workspace

import (
	"context"
	"strings"
	"testing"
	"time"
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
			if err == nil || !IsInvalidInput(err) || !strings.Contains(err.Error(), tc.want) {
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
			if n := count(calls(), "plan"); n != 1 {
				t.Errorf("%d plans of the same invalid inputs, want 1", n)
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
