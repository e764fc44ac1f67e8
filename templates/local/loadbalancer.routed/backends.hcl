# Which changes of this module only move backends (plan.backends_only: a
# node joined or left, a node port changed), for policy rules such as
# examples/policy/backends-only-without-review.hcl; docs/templates.md.
backends "lbhost_routed_vip" {
  attributes = ["nexthops"]
}
