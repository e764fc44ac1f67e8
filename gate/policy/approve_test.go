package policy

import (
	"testing"

	"github.com/tfccm/tfccm/config"
)

// TestApprover: the first approve rule whose validations all pass
// approves; a failed one is neither a denial, an approval required nor a
// warning; other actions never approve.
func TestApprover(t *testing.T) {
	s, err := Compile([]config.Policy{
		{Name: "warn-all", Action: config.PolicyWarn, Validations: []config.PolicyValidation{{Expression: "false"}}},
		{Name: "backends", Action: config.PolicyApprove, Validations: []config.PolicyValidation{{Expression: "plan.backends_only"}}},
		{Name: "small", Action: config.PolicyApprove, Validations: []config.PolicyValidation{{Expression: "plan.resource_changes.size() < 2"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		plan map[string]any
		want string
	}{
		{"backends only", backendsOnly(true, rc("a.x", update, lb, lb), rc("b.x", update, lb, lb)), "backends"},
		{"small", backendsOnly(false, rc("a.x", update, lb, lb)), "small"},
		{"neither", backendsOnly(false, rc("a.x", update, lb, lb), rc("b.x", update, lb, lb)), ""},
		{"no class: the rule fails", plan(rc("a.x", update, lb, lb), rc("b.x", update, lb, lb)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := s.Check(Input{Plan: tc.plan, Workspace: Workspace{Name: "lb", Kind: "loadbalancer"}})
			if got := s.Approver(fs); got != tc.want {
				t.Fatalf("Approver = %q, want %q (findings %v)", got, tc.want, fs)
			}
			deny, approval, warnings := Verdict(fs)
			if deny != nil || approval != nil || len(warnings) != 1 || warnings[0].Rule != "warn-all" {
				t.Fatalf("Verdict = %v, %v, %v: a failed approve rule is none of these", deny, approval, warnings)
			}
		})
	}
	if (&Set{}).Approver(nil) != "" {
		t.Fatal("an empty set approves")
	}
}
