package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"

	"github.com/tfccm/tfccm/config"
)

// costLimit bounds one expression's evaluation (CEL's cost units), so a
// rule cannot stall the apply path.
const costLimit = 10_000_000

// Finding is one rule's failed validation.
type Finding struct {
	Rule    string `json:"rule"`
	Action  string `json:"action"` // config.PolicyDeny, PolicyWarn, PolicyRequireApproval, PolicyApprove
	Message string `json:"message"`
}

func (f Finding) String() string { return fmt.Sprintf("policy %s: %s", f.Rule, f.Message) }

// Input is what the expressions see.
type Input struct {
	// Plan is the redacted JSON plan (plan): plans.PolicyDocument.
	Plan map[string]any
	// Workspace describes the workspace (workspace).
	Workspace Workspace
}

// Workspace is the workspace variable: its name, kind (the template
// contract's, templates.Kind: "loadbalancer" or "routes") and what the plan is for: a destroy (Service deleted), a
// drift repair, the first apply (create), or an adoption (imports).
type Workspace struct {
	Name, Kind             string
	Destroy, Drift, Create bool
	// Imports counts the resources the plan imports: an adoption
	// (tfccm.io/adopt; workspace.adopt is true, workspace.imports the
	// count).
	Imports int
}

func (w Workspace) value() map[string]any {
	return map[string]any{"name": w.Name, "kind": w.Kind, "destroy": w.Destroy, "drift": w.Drift, "create": w.Create,
		"adopt": w.Imports > 0, "imports": int64(w.Imports)}
}

// Set is the compiled rules of a cloud config.
type Set struct {
	rules []rule
}

type rule struct {
	name, action string
	variables    []variable
	validations  []validation
}

type variable struct {
	name string
	prog cel.Program
}

type validation struct {
	expr, message string
	prog, msg     cel.Program // msg is nil without a message expression
}

// newEnv is the CEL environment of every expression.
func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("plan", cel.DynType),
		cel.Variable("workspace", cel.DynType),
		cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)),
		ext.Strings(), ext.Lists(), ext.Sets(),
	)
}

// Compile compiles the config's policies; the error names every rule and
// expression that does not compile. No policies give an empty Set.
func Compile(policies []config.Policy) (*Set, error) {
	env, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	s := &Set{}
	var errs []error
	for _, p := range policies {
		r := rule{name: p.Name, action: p.Action}
		if r.action == "" {
			r.action = config.DefaultPolicyAction
		}
		for _, v := range p.Variables {
			prog, err := compile(env, v.Expression, nil)
			if err != nil {
				errs = append(errs, fmt.Errorf("policy %q, variable %q: %w", p.Name, v.Name, err))
				continue
			}
			r.variables = append(r.variables, variable{name: v.Name, prog: prog})
		}
		for i, v := range p.Validations {
			val := validation{expr: v.Expression, message: v.Message}
			if val.prog, err = compile(env, v.Expression, cel.BoolType); err != nil {
				errs = append(errs, fmt.Errorf("policy %q, validation %d: expression: %w", p.Name, i+1, err))
			}
			if v.MessageExpression != "" {
				if val.msg, err = compile(env, v.MessageExpression, cel.StringType); err != nil {
					errs = append(errs, fmt.Errorf("policy %q, validation %d: message_expression: %w", p.Name, i+1, err))
				}
			}
			r.validations = append(r.validations, val)
		}
		s.rules = append(s.rules, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// compile checks expr and, when want is set, that it gives that type (or
// dyn, decided at evaluation).
func compile(env *cel.Env, expr string, want *cel.Type) (cel.Program, error) {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if want != nil && ast.OutputType() != cel.DynType && !ast.OutputType().IsExactType(want) {
		return nil, fmt.Errorf("gives %s, want %s", ast.OutputType(), want)
	}
	return env.Program(ast, cel.CostLimit(costLimit))
}

// Empty reports whether there are no rules.
func (s *Set) Empty() bool { return s == nil || len(s.rules) == 0 }

// Check evaluates every rule on in and returns the failed validations, in
// the rules' order. A rule whose evaluation fails counts as failed, with
// the error as its message (ValidatingAdmissionPolicy's failurePolicy:
// Fail).
func (s *Set) Check(in Input) []Finding {
	if s.Empty() {
		return nil
	}
	var out []Finding
	for _, r := range s.rules {
		out = append(out, r.check(in)...)
	}
	return out
}

func (r rule) check(in Input) []Finding {
	vars := map[string]any{}
	act := map[string]any{"plan": in.Plan, "workspace": in.Workspace.value(), "variables": vars}
	fail := func(msg string) []Finding { return []Finding{{Rule: r.name, Action: r.action, Message: msg}} }
	for _, v := range r.variables {
		val, _, err := v.prog.Eval(act)
		if err != nil {
			return fail(fmt.Sprintf("variable %s: %v", v.name, err))
		}
		vars[v.name] = val
	}
	var out []Finding
	for _, v := range r.validations {
		val, _, err := v.prog.Eval(act)
		if err != nil {
			out = append(out, fail(fmt.Sprintf("evaluation failed: %v", err))...)
			continue
		}
		if ok, isBool := val.Value().(bool); !isBool {
			out = append(out, fail(fmt.Sprintf("expression gives %s, not a bool", val.Type()))...)
			continue
		} else if ok {
			continue
		}
		out = append(out, fail(v.messageFor(act))...)
	}
	return out
}

// messageFor is the failed validation's message: the message expression's
// string, else message, else the expression.
func (v validation) messageFor(act map[string]any) string {
	if v.msg != nil {
		if val, _, err := v.msg.Eval(act); err == nil {
			if s, ok := stringOf(val); ok && strings.TrimSpace(s) != "" {
				return s
			}
		}
	}
	if v.message != "" {
		return v.message
	}
	return "failed: " + v.expr
}

func stringOf(v ref.Val) (string, bool) {
	if v.Type() != types.StringType {
		return "", false
	}
	s, ok := v.Value().(string)
	return s, ok
}

// Verdict sums up findings: the first denying one (nil if none), the
// first requiring approval, and the warnings. A failed approve rule is
// none of these: the plan is only not approved by it (Set.Approver).
func Verdict(fs []Finding) (deny, approval *Finding, warnings []Finding) {
	for i := range fs {
		switch f := &fs[i]; f.Action {
		case config.PolicyDeny:
			if deny == nil {
				deny = f
			}
		case config.PolicyRequireApproval:
			if approval == nil {
				approval = f
			}
		case config.PolicyApprove:
		default:
			warnings = append(warnings, *f)
		}
	}
	return deny, approval, warnings
}
