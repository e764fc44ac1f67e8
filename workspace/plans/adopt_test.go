package plans

import (
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
)

func change(address string, imported bool, actions ...tfjson.Action) *tfjson.ResourceChange {
	c := &tfjson.Change{Actions: actions}
	if imported {
		c.Importing = &tfjson.Importing{ID: "4711"}
	}
	return &tfjson.ResourceChange{Address: address, Change: c}
}

// TestAdoptionCountsAndRefusal: imports are counted (an import with no
// other change still counts as a change to publish), listed, and refused
// only when the plan would destroy, replace or forget what it imports.
func TestAdoptionCountsAndRefusal(t *testing.T) {
	cases := []struct {
		name       string
		changes    []*tfjson.ResourceChange
		summary    string
		published  int
		imports    []string
		refusedFor []string // addresses the refusal must name; none: accepted
	}{
		{"no import", []*tfjson.ResourceChange{change("a.x", false, tfjson.ActionCreate)},
			"1 to add, 0 to change, 0 to destroy", 1, nil, nil},
		{"import only", []*tfjson.ResourceChange{change("a.x", true, tfjson.ActionNoop), change("b.y", false, tfjson.ActionCreate)},
			"1 to import, 1 to add, 0 to change, 0 to destroy", 2, []string{"a.x"}, nil},
		{"import and update", []*tfjson.ResourceChange{change("a.x", true, tfjson.ActionUpdate)},
			"1 to import, 0 to add, 1 to change, 0 to destroy", 1, []string{"a.x"}, nil},
		{"import and replace", []*tfjson.ResourceChange{change("a.x", true, tfjson.ActionDelete, tfjson.ActionCreate), change("b.y", true, tfjson.ActionNoop), change("c.z", false, tfjson.ActionDelete, tfjson.ActionCreate)},
			"2 to import, 2 to add, 0 to change, 2 to destroy", 3, []string{"a.x", "b.y"}, []string{"a.x (replace)"}},
		{"import and destroy", []*tfjson.ResourceChange{change("a.x", true, tfjson.ActionDelete)},
			"1 to import, 0 to add, 0 to change, 1 to destroy", 1, []string{"a.x"}, []string{"a.x (delete)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := &tfjson.Plan{ResourceChanges: tc.changes}
			var p PendingPlan
			pub := Redact(plan, &p)
			if p.Summary() != tc.summary {
				t.Errorf("summary %q, want %q", p.Summary(), tc.summary)
			}
			if len(pub.ResourceChanges) != tc.published {
				t.Errorf("published %d changes, want %d", len(pub.ResourceChanges), tc.published)
			}
			for _, c := range pub.ResourceChanges {
				if imported := strings.Join(tc.imports, " "); (c.Importing != nil) != strings.Contains(imported, c.Address) {
					t.Errorf("%s: published importing %+v", c.Address, c.Importing)
				}
			}
			if got := strings.Join(Imports(plan), " "); got != strings.Join(tc.imports, " ") {
				t.Errorf("imports %q, want %q", got, tc.imports)
			}
			err := CheckAdoption(plan)
			if (err != nil) != (len(tc.refusedFor) > 0) {
				t.Fatalf("refusal %v, want one naming %v", err, tc.refusedFor)
			}
			for _, a := range tc.refusedFor {
				if !strings.Contains(err.Error(), a) {
					t.Errorf("refusal %q does not name %s", err, a)
				}
			}
			if err != nil && strings.Contains(err.Error(), "c.z") {
				t.Errorf("refusal names a replaced resource that is not adopted: %v", err)
			}
		})
	}
}
