package tofu

import (
	"strings"
	"testing"
)

func TestPlanLineWriter(t *testing.T) {
	long := strings.Repeat("x", maxPlanLine+10)
	for _, c := range []struct {
		name, out, want string
		none            bool // "No changes."
	}{
		{"create", "\nOpenTofu will perform the following actions:\n\nPlan: 2 to add, 0 to change, 0 to destroy.\n", "2 to add, 0 to change, 0 to destroy", false},
		{"replace", "Plan: 1 to add, 1 to change, 1 to destroy.\n\nChanges to Outputs:\n", "1 to add, 1 to change, 1 to destroy", false},
		{"import and forget", "Plan: 1 to import, 3 to add, 0 to change, 0 to destroy, 2 to forget.\n", "1 to import, 3 to add, 0 to change, 0 to destroy, 2 to forget", false},
		{"CRLF", "Plan: 4 to add, 0 to change, 0 to destroy.\r\n", "4 to add, 0 to change, 0 to destroy", false},
		{"last line wins", "Plan: 1 to add, 0 to change, 0 to destroy.\nPlan: 5 to add, 0 to change, 0 to destroy.\n", "5 to add, 0 to change, 0 to destroy", false},
		{"outputs only", "Changes to Outputs:\n  + o = 1\n", "", false},
		{"no newline yet", "Plan: 2 to add, 0 to change, 0 to destroy.", "", false},
		{"inside a value", "  + input = \"Plan: 9 to add, 0 to change, 0 to destroy.\"\n", "", false},
		{"after a long line", long + "Plan: 2 to add, 0 to change, 0 to destroy.\n", "", false},
		{"a long line before", long + "\nPlan: 2 to add, 0 to change, 0 to destroy.\n", "2 to add, 0 to change, 0 to destroy", false},
		{"no changes", "\nNo changes. Your infrastructure matches the configuration.\n\nApply complete! Resources: 0 added, 0 changed, 0 destroyed.\n", "", true},
		{"planned, then a problem", "OpenTofu planned the following actions, but then encountered a problem:\n\n  # terraform_data.x will be created\nPlan: 1 to add, 0 to change, 0 to destroy.\n", "", false},
		{"no changes inside a value", "  + input = \"No changes.\"\n", "", false},
		{"apply output", "Plan: 1 to add, 0 to change, 0 to destroy.\nlbhost_frontend.this: Creating...\nApply complete! Resources: 1 added, 0 changed, 0 destroyed.\n", "1 to add, 0 to change, 0 to destroy", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Whole, and one byte at a time (a pipe splits anywhere).
			for _, chunk := range []int{len(c.out), 1} {
				var told []string
				w := &PlanLineWriter{OnSummary: func(s string) { told = append(told, s) }}
				for out := c.out; out != ""; {
					n := min(chunk, len(out))
					if got, err := w.Write([]byte(out[:n])); got != n || err != nil {
						t.Fatalf("Write = %d, %v", got, err)
					}
					out = out[n:]
				}
				got, ok := w.Summary()
				if got != c.want || ok != (c.want != "") {
					t.Errorf("chunks of %d: summary = %q, %v; want %q", chunk, got, ok, c.want)
				}
				if ok && (len(told) == 0 || told[len(told)-1] != got) {
					t.Errorf("chunks of %d: told %q, want the summary %q last", chunk, told, got)
				}
				if !ok && len(told) > 0 {
					t.Errorf("chunks of %d: told %q without a summary", chunk, told)
				}
				if w.none != c.none || w.Planning() != (!ok && !c.none) {
					t.Errorf("chunks of %d: none %v planning %v, want none %v", chunk, w.none, w.Planning(), c.none)
				}
			}
		})
	}
	var none *PlanLineWriter
	if s, ok := none.Summary(); ok || s != "" {
		t.Errorf("no plan: summary = %q, %v", s, ok)
	}
	if none.Planning() {
		t.Error("no apply without a saved plan: planning")
	}
}
