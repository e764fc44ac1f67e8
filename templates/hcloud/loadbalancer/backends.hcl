# Which changes of this module only move backends (plan.backends_only: a
# node joined or left, a node port changed), for policy rules such as
# examples/policy/backends-only-without-review.hcl; docs/templates.md.
backends "hcloud_load_balancer_target" {
  member = true
}

backends "hcloud_load_balancer_service" {
  attributes = ["destination_port"]
}
