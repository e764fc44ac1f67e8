# Adoption (tfccm.io/adopt): the first plan imports the existing load
# balancer by its numeric id instead of creating one, so it keeps its
# addresses, with the provider's documented import ids for its parts:
# services "<load balancer id>__<listen port>", server targets
# "<load balancer id>__server__<server id>" and the network attachment
# "<load balancer id>-<network id>". The load balancer must already have a
# service for every Service port and a server target for every node (as the
# hcloud cloud-controller-manager leaves it); a missing one fails the plan
# naming it.

variable "adopt" {
  description = "tfccm.io/adopt: the existing load balancer to import instead of creating one (key id, and the parts' ids), or null (see README.md)."
  type        = map(string)
  default     = null
}

import {
  for_each = var.adopt == null ? {} : { load_balancer = var.adopt.id }

  to = hcloud_load_balancer.this
  id = each.value
}

import {
  for_each = var.adopt == null ? {} : { for p in var.service.ports : tostring(p.port) => "${var.adopt.id}__${p.port}" }

  to = hcloud_load_balancer_service.port[each.key]
  id = each.value
}

import {
  for_each = var.adopt == null ? {} : { for name, id in local.servers : name => "${var.adopt.id}__server__${id}" }

  to = hcloud_load_balancer_target.node[each.key]
  id = each.value
}

import {
  for_each = var.adopt == null || !local.network ? {} : { network = "${var.adopt.id}-${var.settings.network_id}" }

  to = hcloud_load_balancer_network.this[0]
  id = each.value
}
