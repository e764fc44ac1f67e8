package plans

import (
	"errors"
	"fmt"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
)

// TestCountAndSummary: a plan's resource actions counted as tofu counts
// them (a replacement is one add and one destroy; no-ops and reads are not
// changes), and the one-line summary.
func TestCountAndSummary(t *testing.T) {
	cases := []struct {
		name    string
		actions []tfjson.Actions
		drift   bool
		changes int
		want    string
	}{
		{"none", nil, false, 0, "0 to add, 0 to change, 0 to destroy"},
		{"create update delete", []tfjson.Actions{{tfjson.ActionCreate}, {tfjson.ActionUpdate}, {tfjson.ActionDelete}}, false, 3, "1 to add, 1 to change, 1 to destroy"},
		{"replace", []tfjson.Actions{{tfjson.ActionDelete, tfjson.ActionCreate}}, false, 1, "1 to add, 0 to change, 1 to destroy"},
		{"no-op and read", []tfjson.Actions{{tfjson.ActionNoop}, {tfjson.ActionRead}}, false, 0, "0 to add, 0 to change, 0 to destroy"},
		{"drift repair", []tfjson.Actions{{tfjson.ActionUpdate}}, true, 1, "drift repair (the infrastructure drifted from the applied plan): 0 to add, 1 to change, 0 to destroy"},
		{"forget", []tfjson.Actions{{tfjson.ActionForget}, {tfjson.ActionDelete}}, false, 2, "0 to add, 0 to change, 1 to destroy, 1 to forget"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := PendingPlan{Drift: tc.drift}
			changes := 0
			for _, a := range tc.actions {
				if p.Count(a) {
					changes++
				}
			}
			if changes != tc.changes || p.Summary() != tc.want {
				t.Errorf("counted %d changes, summary %q; want %d, %q", changes, p.Summary(), tc.changes, tc.want)
			}
		})
	}
}

// TestStateChangedError: the error names both states and is
// ErrStateChanged, also wrapped.
func TestStateChangedError(t *testing.T) {
	err := fmt.Errorf("apply: %w", &StateChangedError{Was: StateStamp{Lineage: "l", Serial: 1}, Now: StateStamp{}})
	var sc *StateChangedError
	if !errors.Is(err, ErrStateChanged) || !errors.As(err, &sc) {
		t.Fatalf("%v is not ErrStateChanged", err)
	}
	if want := "the state changed since it was made (lineage l serial 1, now no state)"; sc.Why() != want {
		t.Errorf("Why() = %q, want %q", sc.Why(), want)
	}
}
