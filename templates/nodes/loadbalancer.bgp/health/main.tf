# Health of a node-mode load balancer over BGP (tfccm.io/Degraded,
# tfccm.io/VIPHeld):
# tfccm plans this root module with the load balancer's own inputs
# (../tfccm.auto.tfvars) every health interval. It only reads, through
# lbhost's data source, the status the node agents report on the Service's
# NodeVIP objects (one per family, ../main.tf): which node holds each
# address and which nodes they count eligible.
terraform {
  required_version = ">= 1.9.0"

  required_providers {
    lbhost = {
      source = "tfccm/lbhost"
    }
  }
}

variable "load_balancer_id" {
  type = string
}

variable "service" {
  # The part of ../variables.tf's service type this module reads.
  type = object({
    load_balancer_ips = list(string)
  })
}

variable "nodes" {
  type = list(object({
    name   = string
    labels = map(string)
  }))
}

variable "settings" {
  # The part of ../variables.tf's settings type this module reads.
  type = object({
    namespace     = string
    node_selector = optional(map(string), {})
  })
}

provider "lbhost" {
  kubernetes = {
    namespace = var.settings.namespace
  }
}

locals {
  # As ../main.tf: the families served and the nodes that may hold them.
  families = distinct([for a in var.service.load_balancer_ips : strcontains(a, ":") ? "IPv6" : "IPv4"])
  eligible = sort([for n in var.nodes : n.name
  if alltrue([for k, v in var.settings.node_selector : lookup(n.labels, k, null) == v])])
}

data "lbhost_node_vip_holder" "vip" {
  for_each = toset(local.families)

  name = "${var.load_balancer_id}-${each.key == "IPv4" ? "4" : "6"}"
}

output "backends" {
  description = "Every node the node selector picks, healthy when the node agents count it eligible to hold every family's address (a ready node, with a ready endpoint under externalTrafficPolicy Local, whose agent answers)."
  value = [for n in local.eligible : {
    node    = n
    healthy = alltrue([for f, h in data.lbhost_node_vip_holder.vip : contains(h.candidates, n)])
  }]
}

output "vip_holders" {
  description = "Per IP family served, the nodes announcing its address over BGP now as the agents report it (the NodeVIP's status.announcers): every one serves at once (ECMP), so several are right and none means no router learns the address (tfccm.io/VIPHeld Announced or NoAnnouncer; vip_holder_kind). A family no node is meant to hold (vip_idle) is left out."
  value       = { for f, h in data.lbhost_node_vip_holder.vip : f => h.announcers if h.reason != "NoLocalEndpoint" }
}

output "vip_idle" {
  description = "Per IP family no node is meant to announce, why: externalTrafficPolicy Local and no ready endpoint of the Service on any node (tfccm.io/VIPHeld says NoLocalEndpoint)."
  value       = { for f, h in data.lbhost_node_vip_holder.vip : f => h.reason if h.reason == "NoLocalEndpoint" }
}

output "vip_holder_kind" {
  description = "The holders vip_holders names are nodes announcing over BGP, all at once: tfccm.io/VIPHeld is active-active (no split brain, no holders gauge)."
  value       = "BGP node"
}
