package config

import (
	"fmt"
	"strings"
)

// The policy blocks: their declarations and the checks of their names and
// actions (package policy compiles their expressions).

// Policy actions: what a failed validation does to a plan.
const (
	PolicyDeny            = "deny"
	PolicyWarn            = "warn"
	PolicyRequireApproval = "require-approval"
	// PolicyApprove is the one action that lets a plan through: in review
	// mode, a plan every validation of an approve rule passes is applied
	// without a person's approval (unless another rule denies it or
	// requires approval, or a change window holds it).
	PolicyApprove = "approve"
)

// Policy is one rule over plans, in ValidatingAdmissionPolicy's shape:
// variables, then validations; its CEL expressions are compiled by package
// policy when the controller (or `tfccm plan`) starts.
type Policy struct {
	Name        string             `hcl:"name,label" doc:"Names the rule in Events, conditions and the fleet plan: 1-63 characters of lowercase letters, digits and '-'."`
	Action      string             `hcl:"action,optional" doc:"What a failed validation does: deny (the plan is not applied), warn (a Warning Event; applied), require-approval (applied only once its plan hash is approved, as in review mode), approve (the other way round: in review mode a plan that passes every validation is applied without a person; one that fails waits for approval as before)."`
	Variables   []PolicyVariable   `hcl:"variable,block" doc:"A named CEL expression, evaluated in order before the validations; later variables and the validations read it as variables.NAME."`
	Validations []PolicyValidation `hcl:"validation,block" doc:"A CEL expression over plan, workspace and variables that must be true for the plan to pass."`
}

// PolicyVariable is a named CEL expression (ValidatingAdmissionPolicy's
// spec.variables).
type PolicyVariable struct {
	Name       string `hcl:"name,label" doc:"The variable's name: a CEL identifier."`
	Expression string `hcl:"expression" doc:"The CEL expression."`
}

// PolicyValidation is one check (ValidatingAdmissionPolicy's
// spec.validations).
type PolicyValidation struct {
	Expression        string `hcl:"expression" doc:"A CEL expression that evaluates to a bool: false fails the rule."`
	Message           string `hcl:"message,optional" doc:"The message when it fails (default: the expression)."`
	MessageExpression string `hcl:"message_expression,optional" doc:"A CEL expression giving the message as a string; if it fails or gives no string, message is used."`
}

// finishPolicies checks the policies' names and actions; their
// expressions are checked when package policy compiles them.
func (c *Config) finishPolicies(k *checker) {
	seen := map[string]bool{}
	for i := range c.Policies {
		p := &c.Policies[i]
		if !validName(p.Name) {
			k.errAt(at("policy"), "Invalid policy name", fmt.Sprintf("policy %q: a name is 1-63 characters of lowercase letters, digits and '-', starting with a letter.", p.Name))
		}
		if seen[p.Name] {
			k.errAt(at("policy"), "Duplicate policy", fmt.Sprintf("policy %q is declared twice.", p.Name))
		}
		seen[p.Name] = true
		p.Action = orDefault(p.Action, DefaultPolicyAction)
		switch p.Action {
		case PolicyDeny, PolicyWarn, PolicyRequireApproval, PolicyApprove:
		default:
			k.errAt(at("policy"), "Invalid policy action", fmt.Sprintf("policy %q: action is %s, not %q.", p.Name, strings.Join([]string{PolicyDeny, PolicyWarn, PolicyRequireApproval, PolicyApprove}, ", "), p.Action))
		}
		if len(p.Validations) == 0 {
			k.errAt(at("policy"), "Policy without validations", fmt.Sprintf("policy %q has no validation block.", p.Name))
		}
	}
}
