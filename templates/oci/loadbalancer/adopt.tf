# Adoption (tfccm.io/adopt): the first plan imports the existing network
# load balancer by its OCID instead of creating one, so it keeps its
# addresses. Its listeners and backend sets are imported by the provider's
# documented ids "networkLoadBalancers/<nlb OCID>/listeners/<name>" and
# ".../backendSets/<name>" when the annotation names them as parts
# "name.<port>-<family>" (e.g. {"id": "ocid1.networkloadbalancer...",
# "name.80-ipv4": "TCP-80"}, the names the OCI cloud-controller-manager
# gives them); the template then keeps those names (a rename would replace
# them). A Service port without a part gets a new listener and backend set.

variable "adopt" {
  description = "tfccm.io/adopt: the existing load balancer to import instead of creating one (key id, and the parts' ids), or null (see README.md)."
  type        = map(string)
  default     = null
}

locals {
  adopted = var.adopt == null ? {} : var.adopt
  # The listener and backend set name of each listener key: the adopted
  # one's, else the key.
  listener_names = { for k, l in local.listeners : k => lookup(local.adopted, "name.${k}", k) }
  adopted_names  = { for k, l in local.listeners : k => local.adopted["name.${k}"] if contains(keys(local.adopted), "name.${k}") }
}

import {
  for_each = var.adopt == null ? {} : { load_balancer = var.adopt.id }

  to = oci_network_load_balancer_network_load_balancer.this
  id = each.value
}

import {
  for_each = { for k, name in local.adopted_names : k => "networkLoadBalancers/${var.adopt.id}/backendSets/${name}" }

  to = oci_network_load_balancer_backend_set.port[each.key]
  id = each.value
}

import {
  for_each = { for k, name in local.adopted_names : k => "networkLoadBalancers/${var.adopt.id}/listeners/${name}" }

  to = oci_network_load_balancer_listener.port[each.key]
  id = each.value
}
