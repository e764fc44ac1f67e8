# In review mode, apply without a person a plan that only moves backends:
# a node joined or left, a node port changed (plan.backends_only, which
# tfccm computes from the plan and the template's backends.hcl; a tenant
# cannot set it). Every other plan, and the first apply and the destroy of
# a load balancer, still waits for `tfccm approve`.
policy "backends-only-without-review" {
  action = "approve"

  validation {
    expression = "plan.backends_only && !workspace.create && !workspace.destroy"
    message    = "more than backends change: a person reviews it"
  }
}
