# Backend health of the load balancer (tfccm.io/Degraded): tfccm plans this
# root module with the load balancer's own inputs (../tfccm.auto.tfvars)
# every health interval and reads its `backends` output. It only reads the
# server states of the Service's HAProxy frontend on every active LB host,
# through lbhost's data source; a node is healthy when every host finds it
# healthy (a host that cannot reach a node it would forward to is a
# degraded load balancer too).
terraform {
  required_version = ">= 1.9.0"

  required_providers {
    lbhost = {
      source = "tfccm/lbhost"
    }
  }
}

variable "cluster_name" {
  type = string
}

variable "load_balancer_id" {
  type = string
}

variable "service" {
  # The part of ../variables.tf's service type this module reads.
  type = object({
    ip_families = list(string)
    shared_ip   = optional(string)
  })
}

variable "settings" {
  # The part of ../variables.tf's settings type this module reads.
  type = object({
    hosts = map(object({
      address             = string
      ssh_port            = optional(number, 22)
      user                = optional(string, "root")
      sudo                = optional(bool)
      host_key            = optional(string)
      retired             = optional(bool, false)
      config_dir          = optional(string)
      keepalived_config   = optional(string)
      keepalived_pid_file = optional(string)
      frr_pathspace       = optional(string)
    }))
    config_dir           = optional(string, "/etc/tfccm/lbhost")
    haproxy              = optional(string)
    known_hosts_file     = optional(string)
    ssh_agent_socket     = optional(string)
    ssh_private_key_file = optional(string)
    sudo                 = optional(bool, false)
    vip_pool6            = optional(string)
  })
}

provider "lbhost" {
  alias    = "host"
  for_each = local.active

  config_dir    = coalesce(each.value.config_dir, var.settings.config_dir)
  haproxy       = var.settings.haproxy
  frr_pathspace = each.value.frr_pathspace
  ssh = {
    host             = each.value.address
    port             = each.value.ssh_port
    user             = each.value.user
    host_key         = each.value.host_key
    known_hosts_file = each.value.host_key == null ? var.settings.known_hosts_file : null
    agent_socket     = var.settings.ssh_agent_socket
    private_key_file = var.settings.ssh_private_key_file
    sudo             = each.value.sudo != null ? each.value.sudo : var.settings.sudo
  }
}

locals {
  active = { for name, h in var.settings.hosts : name => h if !h.retired }
}

data "lbhost_backend_health" "lb" {
  for_each = local.active
  provider = lbhost.host[each.key]

  # The IPv4 frontend when the Service has one (both families' frontends
  # have the same backends), else the IPv6 one.
  frontend = "${var.cluster_name}_${var.load_balancer_id}${contains(var.service.ip_families, "IPv4") ? "" : ".6"}"
}

locals {
  servers = distinct(flatten([for h in data.lbhost_backend_health.lb : [for b in h.backends : b.name]]))
}

output "backends" {
  description = "Every backend (node) and whether HAProxy on every active LB host that answers finds it healthy."
  value = [for s in local.servers : {
    node    = s
    healthy = alltrue([for h in data.lbhost_backend_health.lb : alltrue([for b in h.backends : b.healthy if b.name == s])])
  }]
}

output "hosts" {
  description = "Every active LB host and whether it could be connected to: an unreachable one is named in the Service's Degraded condition (its changes wait for it; the others serve) and in tfccm_load_balancer_host_up."
  value       = { for name, h in data.lbhost_backend_health.lb : name => h.reachable }
}

# No vip_holders output: with BGP every healthy host announces the VIP
# (ECMP), so more than one holder is right; which hosts announce it is
# left for a later change (docs/bgp.md).

# Every active host's BGP sessions (its speaker is ../../bgp/'s): one not
# Established is named in the Service's tfccm.io/BGPEstablished condition
# and a Warning Event, and tfccm_bgp_session_up is 0 for it. A host that
# does not answer is left out (named by the hosts output instead).
data "lbhost_bgp_sessions" "host" {
  for_each = local.active
  provider = lbhost.host[each.key]
}

output "bgp_sessions" {
  description = "Per active LB host that answers, its BGP sessions: peer name and state."
  value       = { for name, d in data.lbhost_bgp_sessions.host : name => [for s in d.sessions : { peer = s.peer, state = s.state }] if d.reachable }
}
