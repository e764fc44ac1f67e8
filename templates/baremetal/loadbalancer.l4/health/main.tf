# Backend health of the load balancer (tfccm.io/Degraded): tfccm plans this
# root module with the load balancer's own inputs (../tfccm.auto.tfvars)
# every health interval and reads its `backends` output. It only reads,
# through lbhost's data source, the backends each active LB host's
# lbhost-router forwards new connections to (its nftables DNAT targets:
# the nodes passing their health check); a node is healthy when every host
# forwards to it (a host that cannot reach a node is a degraded load
# balancer too: it takes over the VIP on a failover).
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
    shared_ip        = optional(string)
    load_balancer_ip = optional(string)
    segments = optional(map(object({
      hosts = optional(list(string), [])
    })), {})
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
    }))
    config_dir           = optional(string, "/etc/tfccm/lbhost")
    known_hosts_file     = optional(string)
    ssh_agent_socket     = optional(string)
    ssh_private_key_file = optional(string)
    sudo                 = optional(bool, false)
  })
}

provider "lbhost" {
  alias    = "host"
  for_each = local.active

  config_dir = coalesce(each.value.config_dir, var.settings.config_dir)
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
  # The hosts of the VIP's segment (../main.tf's local.serving).
  named   = try(var.service.segments[var.service.load_balancer_ip].hosts, [])
  serving = { for name, h in local.active : name => h if length(local.named) == 0 || contains(local.named, name) }
}

data "lbhost_backend_health" "lb" {
  for_each = local.serving
  provider = lbhost.host[each.key]

  l4_frontend = "${var.cluster_name}_${var.load_balancer_id}"
}

locals {
  servers = distinct(flatten([for h in data.lbhost_backend_health.lb : [for b in h.backends : b.name]]))
}

output "backends" {
  description = "Every backend (node) and whether the layer-4 load balancer on every active LB host that answers forwards to it."
  value = [for s in local.servers : {
    node    = s
    healthy = alltrue([for h in data.lbhost_backend_health.lb : alltrue([for b in h.backends : b.healthy if b.name == s])])
  }]
}

output "hosts" {
  description = "Every active LB host and whether it could be connected to: an unreachable one is named in the Service's Degraded condition (its changes wait for it; the others serve) and in tfccm_load_balancer_host_up."
  value       = { for name, h in data.lbhost_backend_health.lb : name => h.reachable }
}

# Whether each active host holds the load balancer's (IPv4) VIP right now:
# the address of its VRRP instance on the interface, which keepalived sets
# only on the master. Two holders is a split brain, none a lost VIP
# (tfccm.io/VIPHeld).
data "lbhost_vip_holder" "vip" {
  for_each = local.active
  provider = lbhost.host[each.key]

  owner = "${var.cluster_name}_${var.load_balancer_id}"
  share = var.service.shared_ip
}

output "vip_holders" {
  description = "Per IP family served (IPv4), the active LB hosts that answer and hold its VIP now, sorted: one is right; two or more a split brain; none a lost VIP (tfccm.io/VIPHeld, tfccm_load_balancer_vip_holders)."
  value       = { IPv4 = sort([for name, r in data.lbhost_vip_holder.vip : name if r.held]) }
}
