package workspace

import (
	"strings"
	"testing"
)

func TestPlanLineWriter(t *testing.T) {
	long := strings.Repeat("x", maxPlanLine+10)
	for _, c := range []struct {
		name, out, want string
	}{
		{"create", "\nOpenTofu will perform the following actions:\n\nPlan: 2 to add, 0 to change, 0 to destroy.\n", "2 to add, 0 to change, 0 to destroy"},
		{"replace", "Plan: 1 to add, 1 to change, 1 to destroy.\n\nChanges to Outputs:\n", "1 to add, 1 to change, 1 to destroy"},
		{"import and forget", "Plan: 1 to import, 3 to add, 0 to change, 0 to destroy, 2 to forget.\n", "3 to add, 0 to change, 0 to destroy"},
		{"CRLF", "Plan: 4 to add, 0 to change, 0 to destroy.\r\n", "4 to add, 0 to change, 0 to destroy"},
		{"last line wins", "Plan: 1 to add, 0 to change, 0 to destroy.\nPlan: 5 to add, 0 to change, 0 to destroy.\n", "5 to add, 0 to change, 0 to destroy"},
		{"outputs only", "Changes to Outputs:\n  + o = 1\n", ""},
		{"no newline yet", "Plan: 2 to add, 0 to change, 0 to destroy.", ""},
		{"inside a value", "  + input = \"Plan: 9 to add, 0 to change, 0 to destroy.\"\n", ""},
		{"after a long line", long + "Plan: 2 to add, 0 to change, 0 to destroy.\n", ""},
		{"a long line before", long + "\nPlan: 2 to add, 0 to change, 0 to destroy.\n", "2 to add, 0 to change, 0 to destroy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Whole, and one byte at a time (a pipe splits anywhere).
			for _, chunk := range []int{len(c.out), 1} {
				w := &planLineWriter{}
				for out := c.out; out != ""; {
					n := min(chunk, len(out))
					if got, err := w.Write([]byte(out[:n])); got != n || err != nil {
						t.Fatalf("Write = %d, %v", got, err)
					}
					out = out[n:]
				}
				got, ok := w.summary()
				if got != c.want || ok != (c.want != "") {
					t.Errorf("chunks of %d: summary = %q, %v; want %q", chunk, got, ok, c.want)
				}
			}
		})
	}
	var none *planLineWriter
	if s, ok := none.summary(); ok || s != "" {
		t.Errorf("no plan: summary = %q, %v", s, ok)
	}
}
