# Deny a plan that changes a resource of a type outside the list: an
# override or variant module cannot reach beyond the load balancer (a
# firewall, a DNS zone, a server). This list is the hcloud set's.
policy "allowed-resource-types" {
  action = "deny"

  variable "allowed" {
    expression = "['hcloud_load_balancer', 'hcloud_load_balancer_network', 'hcloud_load_balancer_service', 'hcloud_load_balancer_target']"
  }
  variable "others" {
    expression = "plan.resource_changes.filter(rc, rc.mode == 'managed' && rc.change.actions != ['no-op'] && !(rc.type in variables.allowed))"
  }

  validation {
    expression         = "variables.others.size() == 0"
    message_expression = "'changes resources of types outside the allowed list: ' + variables.others.map(rc, rc.address).join(', ')"
  }
}
