// Package policy owns the cloud config's policy rules, the first half of
// package gate: it checks plans against them. Rules are written in CEL
// with ValidatingAdmissionPolicy's conventions: each rule has variables
// (named expressions evaluated in order, read as variables.NAME) and
// validations (a boolean expression, a message or a messageExpression),
// and an action taken when a validation fails: deny, warn or
// require-approval; or approve, whose passing validations let a plan
// through review mode without a person (Set.Approver).
//
// Expressions see three variables: plan (tofu's JSON plan with sensitive
// values redacted: resource_changes[] with address, type, name, mode,
// provider_name and change.{actions, before, after, after_unknown}, and
// output_changes, and backends_only, the plan class tfccm computes:
// plans.BackendsOnly), workspace (name, kind "loadbalancer" or "routes" as
// templates.Kind declares them, destroy, drift) and variables. Compile
// checks every expression when the controller or `tfccm plan` starts;
// Check evaluates a plan. Its one consumer is package gate, which the
// workspace engine calls before every apply and the fleet plan for every
// row.
package policy
