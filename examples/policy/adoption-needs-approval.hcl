# Hold every adoption (a Service's tfccm.io/adopt: the plan imports an
# existing load balancer) for approval (tfccm approve), even without review
# mode: an approver reads what is imported and what changes before the
# load balancer becomes the Service's. Later plans of the Service are not
# adoptions and apply as usual.
policy "adoption-needs-approval" {
  action = "require-approval"

  validation {
    expression         = "!workspace.adopt"
    message_expression = "'adopts ' + plan.resource_changes.filter(rc, has(rc.change.importing)).map(rc, rc.address + ' (id ' + rc.change.importing.id + ')').join(', ')"
  }
}
