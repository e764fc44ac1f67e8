package workspace

// The plan class backends_only (plans.BackendsOnly) in the plan document
// policy rules read: computed here from tofu's plan and the workspace's
// own module (plans.BackendsFile), never from anything a tenant writes.

import (
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/tfccm/tfccm/workspace/plans"
)

// classifyBackends sets doc's backends_only for plan, made in dir.
func classifyBackends(doc map[string]any, plan *tfjson.Plan, dir string) {
	doc[plans.BackendsOnlyKey] = plans.BackendsOnly(plan, plans.ReadBackendMembers(dir))
}
