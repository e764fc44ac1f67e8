package policy

import (
	"strings"
	"testing"

	"github.com/tfccm/tfccm/config"
)

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    config.Policy
		want string
	}{
		{"syntax", config.Policy{Name: "a", Validations: []config.PolicyValidation{{Expression: "plan.resource_changes.size( <"}}}, `policy "a", validation 1: expression:`},
		{"not a bool", config.Policy{Name: "b", Validations: []config.PolicyValidation{{Expression: "'yes'"}}}, `policy "b", validation 1: expression: gives string, want bool`},
		{"undeclared", config.Policy{Name: "c", Variables: []config.PolicyVariable{{Name: "v", Expression: "object.x"}}, Validations: []config.PolicyValidation{{Expression: "true"}}}, `policy "c", variable "v": `},
		{"message not a string", config.Policy{Name: "d", Validations: []config.PolicyValidation{{Expression: "true", MessageExpression: "1 + 1"}}}, `policy "d", validation 1: message_expression: gives int`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile([]config.Policy{tc.p})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// TestEvaluationFailureFails: a rule whose evaluation fails counts as
// failed (ValidatingAdmissionPolicy's failurePolicy: Fail), and a message
// expression that fails falls back to message, then to the expression.
func TestEvaluationFailureFails(t *testing.T) {
	s, err := Compile([]config.Policy{
		{Name: "missing-key", Action: config.PolicyWarn, Variables: []config.PolicyVariable{{Name: "x", Expression: "plan.no_such_key"}}, Validations: []config.PolicyValidation{{Expression: "true"}}},
		{Name: "fallback", Validations: []config.PolicyValidation{{Expression: "false", Message: "static", MessageExpression: "plan.no_such_key"}}},
		{Name: "bare", Validations: []config.PolicyValidation{{Expression: "plan.resource_changes.size() > 5"}}},
		{Name: "passes", Validations: []config.PolicyValidation{{Expression: "workspace.kind == 'loadbalancer' && !workspace.destroy"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := s.Check(Input{Plan: plan(), Workspace: Workspace{Name: "lb", Kind: "loadbalancer"}})
	want := []string{
		"warn missing-key: variable x: no such key: no_such_key",
		"deny fallback: static",
		"deny bare: failed: plan.resource_changes.size() > 5",
	}
	if len(got) != len(want) {
		t.Fatalf("findings %v", got)
	}
	for i, f := range got {
		if s := f.Action + " " + f.Rule + ": " + f.Message; s != want[i] {
			t.Errorf("finding %q, want %q", s, want[i])
		}
	}
	deny, approval, warnings := Verdict(got)
	if deny == nil || deny.Rule != "fallback" || approval != nil || len(warnings) != 1 {
		t.Errorf("verdict %v %v %v", deny, approval, warnings)
	}
	if (*Set)(nil).Check(Input{}) != nil || !(&Set{}).Empty() {
		t.Error("an empty set found something")
	}
}
