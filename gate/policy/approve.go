// The approve action: a rule that lets a plan through review mode.

package policy

import "github.com/tfccm/tfccm/config"

// Approver returns the first approve rule (config.PolicyApprove) with no
// finding among fs (Check's answer for the same plan): every validation
// passed, so the rule approves the plan; "" when none does.
func (s *Set) Approver(fs []Finding) string {
	if s.Empty() {
		return ""
	}
	failed := map[string]bool{}
	for _, f := range fs {
		failed[f.Rule] = true
	}
	for _, r := range s.rules {
		if r.action == config.PolicyApprove && !failed[r.name] {
			return r.name
		}
	}
	return ""
}
