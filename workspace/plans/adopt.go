package plans

// Adoption plans: a plan that imports existing infrastructure
// (tfccm.io/adopt) is classed as an adoption for the gate's policy rules,
// and refused when it would destroy or replace what it imports.

import (
	"fmt"
	"sort"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
)

// Imports returns the addresses of the resources plan imports, sorted.
func Imports(plan *tfjson.Plan) []string {
	var out []string
	for _, rc := range plan.ResourceChanges {
		if rc != nil && rc.Change != nil && rc.Change.Importing != nil {
			out = append(out, rc.Address)
		}
	}
	sort.Strings(out)
	return out
}

// CheckAdoption refuses a plan that imports a resource and would also
// destroy or replace it (or forget it): adopting a load balancer must keep
// it and its address. The error names every such resource and its
// actions; nil when the plan imports nothing or keeps what it imports.
func CheckAdoption(plan *tfjson.Plan) error {
	var bad []string
	for _, rc := range plan.ResourceChanges {
		if rc == nil || rc.Change == nil || rc.Change.Importing == nil {
			continue
		}
		a := rc.Change.Actions
		if a.Delete() || a.Replace() || a.Forget() {
			bad = append(bad, fmt.Sprintf("%s (%s)", rc.Address, actionsText(a)))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("adoption refused: the plan would destroy or replace what it adopts: %s; nothing is applied "+
		"(the template's settings or the Service differ from the adopted load balancer in an attribute the cloud cannot change in place: make them match, or adopt nothing)",
		strings.Join(bad, ", "))
}

func actionsText(a tfjson.Actions) string {
	if a.Replace() {
		return "replace"
	}
	parts := make([]string, len(a))
	for i, x := range a {
		parts[i] = string(x)
	}
	return strings.Join(parts, ", ")
}

func publishedImport(i *tfjson.Importing) *PublishedImport {
	if i == nil {
		return nil
	}
	return &PublishedImport{ID: i.ID}
}
