# Deny a plan that destroys more than two resources (replacements count),
# unless the load balancer itself is being deleted with its Service: a
# template change that tears down a fleet's listeners one Service at a time
# is stopped at the first.
policy "at-most-2-destroys" {
  action = "deny"

  variable "destroyed" {
    expression = "plan.resource_changes.filter(rc, 'delete' in rc.change.actions)"
  }

  validation {
    expression         = "workspace.destroy || variables.destroyed.size() <= 2"
    message_expression = "'destroys ' + string(variables.destroyed.size()) + ' resources (' + variables.destroyed.map(rc, rc.address).join(', ') + '); at most 2 may go in one plan'"
  }
}
