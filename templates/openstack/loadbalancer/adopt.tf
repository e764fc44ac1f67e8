# Adoption (tfccm.io/adopt): the first plan imports the existing Octavia
# load balancer by its UUID instead of creating one, so it keeps its VIP.
# Octavia gives every listener, pool and health monitor a UUID of its own,
# which the annotation names as parts per Service port key
# "<protocol>-<port>": "listener.tcp-80", "pool.tcp-80", "monitor.tcp-80"
# (the ids cloud-provider-openstack's load balancer has; openstack
# loadbalancer listener list --loadbalancer <id>), and "floating_ip" for
# the floating IP's UUID. A pool's members are imported with the pool (the
# provider's import id of openstack_lb_members_v2 is the pool's id); the
# floating IP's association with the floating IP's id.

variable "adopt" {
  description = "tfccm.io/adopt: the existing load balancer to import instead of creating one (key id, and the parts' ids), or null (see README.md)."
  type        = map(string)
  default     = null
}

locals {
  adopted = var.adopt == null ? {} : var.adopt
  # The adopted ids of each part kind, by Service port key.
  adopted_parts = {
    for kind in ["listener", "pool", "monitor"] : kind => {
      for k, p in local.ports : k => local.adopted["${kind}.${k}"] if contains(keys(local.adopted), "${kind}.${k}")
    }
  }
}

import {
  for_each = var.adopt == null ? {} : { load_balancer = var.adopt.id }

  to = openstack_lb_loadbalancer_v2.this
  id = each.value
}

import {
  for_each = local.adopted_parts.listener

  to = openstack_lb_listener_v2.port[each.key]
  id = each.value
}

import {
  for_each = local.adopted_parts.pool

  to = openstack_lb_pool_v2.port[each.key]
  id = each.value
}

import {
  for_each = local.adopted_parts.pool

  to = openstack_lb_members_v2.port[each.key]
  id = each.value
}

import {
  for_each = local.adopted_parts.monitor

  to = openstack_lb_monitor_v2.port[each.key]
  id = each.value
}

import {
  for_each = local.floating && var.service.load_balancer_ip == null && var.settings.floating_network != null && contains(keys(local.adopted), "floating_ip") ? { floating_ip = local.adopted.floating_ip } : {}

  to = openstack_networking_floatingip_v2.this[0]
  id = each.value
}

import {
  for_each = local.floating && contains(keys(local.adopted), "floating_ip") ? { floating_ip = local.adopted.floating_ip } : {}

  to = openstack_networking_floatingip_associate_v2.this[0]
  id = each.value
}
