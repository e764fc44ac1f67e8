# Hold any plan that replaces a resource for approval (tfccm approve), even
# without review mode; every other plan is applied as soon as it is made.
# Warn when a plan destroys anything while the Service stays.
policy "replacement-needs-approval" {
  action = "require-approval"

  validation {
    expression         = "!plan.resource_changes.exists(rc, 'delete' in rc.change.actions && 'create' in rc.change.actions)"
    message_expression = "'replaces ' + plan.resource_changes.filter(rc, 'delete' in rc.change.actions && 'create' in rc.change.actions).map(rc, rc.address).join(', ')"
  }
}

policy "destroys-warn" {
  action = "warn"

  validation {
    expression = "workspace.destroy || !plan.resource_changes.exists(rc, rc.change.actions == ['delete'])"
    message    = "the plan destroys resources of a load balancer that stays"
  }
}
