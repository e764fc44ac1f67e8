# Adoption (tfccm.io/adopt): the first plan imports the existing load
# balancer by its UUID (the provider's documented import id) instead of
# creating one, so it keeps its address. Forwarding rules, the health check
# and the droplets are attributes of this one resource: the plan shows them
# as changes of the imported load balancer.

variable "adopt" {
  description = "tfccm.io/adopt: the existing load balancer to import instead of creating one (key id, and the parts' ids), or null (see README.md)."
  type        = map(string)
  default     = null
}

import {
  for_each = var.adopt == null ? {} : { load_balancer = var.adopt.id }

  to = digitalocean_loadbalancer.this
  id = each.value
}
