# Adoption (tfccm.io/adopt: "keepalived:<instance>"): the first plan imports
# a hand-made keepalived VRRP instance that the LB hosts already run, with
# lbhost's import id "keepalived:<instance>,<owner>,<pool>", instead of
# allocating a new VIP: the IPv4 VIP's allocation (the instance read on
# every host: each must answer and have it alike) and each host's VIP. The
# apply then moves the instance out of keepalived's main configuration
# into lbhost's own fragment under its own name, with one reload per host,
# so the VIP stays where it is. The HAProxy frontends are created new
# (binding the VIP beside a hand-made one: retire that afterwards). The
# Service's address must be the instance's VIP (a plan asking another is
# refused), the instance must be on settings.vrrp_interface and carry
# nothing lbhost's instance does not (README.md).

variable "adopt" {
  description = "tfccm.io/adopt: the hand-made keepalived instance to adopt (key id, \"keepalived:<instance>\"), or null (see README.md)."
  type        = map(string)
  default     = null

  validation {
    condition     = var.adopt == null || try(length(var.adopt) == 1 && can(regex("^keepalived:[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", var.adopt.id)), false)
    error_message = "The bare-metal set adopts a hand-made keepalived VRRP instance: tfccm.io/adopt must be keepalived:<instance name> (the vrrp_instance in the LB hosts' keepalived configuration), with no parts."
  }
}

locals {
  # The family adopted (IPv4) to the import id; an IPv6 VIP of a
  # dual-stack Service is allocated new.
  adopt_ids = var.adopt == null ? {} : { for f, v in local.vips : f => "${var.adopt.id},${v.owner},${v.pool}" if f == "IPv4" }
}

import {
  for_each = local.adopt_ids

  to = lbhost_vip_allocation.vip[each.key]
  id = each.value
}

import {
  for_each = { for k, hv in local.active_vips : k => local.adopt_ids[hv.family] if contains(keys(local.adopt_ids), hv.family) }

  to = lbhost_vip.host[each.key]
  id = each.value
}
