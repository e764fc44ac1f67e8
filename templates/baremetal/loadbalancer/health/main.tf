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
    segments = optional(map(object({
      hosts  = optional(list(string), [])
      subnet = optional(string)
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

  config_dir = coalesce(each.value.config_dir, var.settings.config_dir)
  haproxy    = var.settings.haproxy
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
  # The segment of each family's address (../main.tf's local.segment), and
  # the hosts serving the frontend read: its family's segment's.
  segment = { for a, s in var.service.segments : (strcontains(a, ":") ? "IPv6" : "IPv4") => s }
  read    = contains(var.service.ip_families, "IPv4") ? "IPv4" : "IPv6"
  serving = { for name, h in local.active : name => h if length(try(local.segment[local.read].hosts, [])) == 0 || contains(try(local.segment[local.read].hosts, []), name) }
}

data "lbhost_backend_health" "lb" {
  for_each = local.serving
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

# Which active host holds the VIP of each family served (../main.tf's
# local.vips: IPv6 only with settings.vip_pool6) right now: the address of
# its VRRP instance on the interface, which keepalived sets only on the
# master. Two holders is a split brain, none a lost VIP (tfccm.io/VIPHeld).
locals {
  owner = "${var.cluster_name}_${var.load_balancer_id}"
  vip_families = { for f in var.service.ip_families : f => {
    owner = f == "IPv4" ? local.owner : "${local.owner}.6"
    share = var.service.shared_ip == null || f == "IPv4" ? var.service.shared_ip : "${var.service.shared_ip}-6"
  } if f == "IPv4" || var.settings.vip_pool6 != null || try(local.segment[f].subnet, null) != null }
  vip_reads = merge([for f, v in local.vip_families : {
    for name in keys(local.active) : "${name}/${f}" => { host = name, family = f, owner = v.owner, share = v.share }
  }]...)
}

data "lbhost_vip_holder" "vip" {
  for_each = local.vip_reads
  provider = lbhost.host[each.value.host]

  owner = each.value.owner
  share = each.value.share
}

output "vip_holders" {
  description = "Per IP family served, the active LB hosts that answer and hold its VIP now, sorted: one is right; two or more a split brain; none a lost VIP (tfccm.io/VIPHeld, tfccm_load_balancer_vip_holders)."
  value = { for f in keys(local.vip_families) : f => sort([
    for k, r in data.lbhost_vip_holder.vip : local.vip_reads[k].host if local.vip_reads[k].family == f && r.held
  ]) }
}
