# Hosts health (tfccm.io/Degraded, VIPHeld and BGPEstablished of every load
# balancer at once): tfccm refreshes this root module once per health
# interval with every applied load balancer of the set
# (var.load_balancers, by load balancer id) and reports each one's entry of
# the `load_balancers` output as it would its own health module's outputs.
# Every active LB host is read once (lbhost_host_health: one SSH connection
# per host per interval, whatever the number of load balancers), and each
# load balancer's entry is worked out here exactly as its variant's health
# module (../loadbalancer*/health) works it out from its own reads.
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

variable "load_balancers" {
  # Per load balancer: its module and the part of its service input read
  # here (../loadbalancer*/variables.tf).
  type = map(object({
    module = string
    service = object({
      ip_families      = list(string)
      shared_ip        = optional(string)
      load_balancer_ip = optional(string)
      segments = optional(map(object({
        hosts  = optional(list(string), [])
        subnet = optional(string)
      })), {})
    })
  }))
}

variable "settings" {
  # The part of ../loadbalancer*/variables.tf's settings type read here.
  type = object({
    hosts = map(object({
      address       = string
      ssh_port      = optional(number, 22)
      user          = optional(string, "root")
      sudo          = optional(bool)
      host_key      = optional(string)
      retired       = optional(bool, false)
      config_dir    = optional(string)
      frr_pathspace = optional(string)
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

  # The load balancers by variant.
  vrrp = { for id, lb in var.load_balancers : id => lb if lb.module == "loadbalancer" }
  l4   = { for id, lb in var.load_balancers : id => lb if lb.module == "loadbalancer.l4" }
  bgp  = { for id, lb in var.load_balancers : id => lb if lb.module == "loadbalancer.bgp" }

  # What each host is asked for: only what the load balancers present need
  # (a host without FRR is never asked for BGP sessions).
  reads = concat(
    length(local.vrrp) + length(local.bgp) > 0 ? ["haproxy"] : [],
    length(local.l4) > 0 ? ["l4"] : [],
    length(local.vrrp) + length(local.l4) > 0 ? ["vrrp"] : [],
    length(local.bgp) > 0 ? ["bgp"] : [],
  )
}

data "lbhost_host_health" "host" {
  for_each = local.active
  provider = lbhost.host[each.key]

  reads = local.reads
}

locals {
  read = data.lbhost_host_health.host

  # The default variant (../loadbalancer/health): the frontend read on the
  # hosts of its family's segment, the VIP of each family served.
  vrrp_lbs = { for id, lb in local.vrrp : id => {
    frontend = "${var.cluster_name}_${id}${contains(lb.service.ip_families, "IPv4") ? "" : ".6"}"
    serving  = [for name in keys(local.active) : name if length(try(local.segment[id][local.family[id]].hosts, [])) == 0 || contains(try(local.segment[id][local.family[id]].hosts, []), name)]
    vips = { for f in lb.service.ip_families : f => (
      lb.service.shared_ip == null ? (f == "IPv4" ? "${var.cluster_name}_${id}" : "${var.cluster_name}_${id}.6") : (f == "IPv4" ? "share.${lb.service.shared_ip}" : "share.${lb.service.shared_ip}-6")
    ) if f == "IPv4" || var.settings.vip_pool6 != null || try(local.segment[id][f].subnet, null) != null }
  } }
  segment = { for id, lb in local.vrrp : id => { for a, s in lb.service.segments : (strcontains(a, ":") ? "IPv6" : "IPv4") => s } }
  family  = { for id, lb in local.vrrp : id => contains(lb.service.ip_families, "IPv4") ? "IPv4" : "IPv6" }

  # The l4 variant (../loadbalancer.l4/health): the hosts of the VIP's
  # segment, the IPv4 VIP.
  l4_lbs = { for id, lb in local.l4 : id => {
    frontend = "${var.cluster_name}_${id}"
    serving  = [for name in keys(local.active) : name if length(try(lb.service.segments[lb.service.load_balancer_ip].hosts, [])) == 0 || contains(try(lb.service.segments[lb.service.load_balancer_ip].hosts, []), name)]
    vips     = { IPv4 = lb.service.shared_ip == null ? "${var.cluster_name}_${id}" : "share.${lb.service.shared_ip}" }
  } }

  # The bgp variant (../loadbalancer.bgp/health): every active host.
  bgp_lbs = { for id, lb in local.bgp : id => {
    frontend = "${var.cluster_name}_${id}${contains(lb.service.ip_families, "IPv4") ? "" : ".6"}"
  } }
  bgp_sessions = { for name, d in local.read : name => [for s in d.bgp_sessions : { peer = s.peer, state = s.state }] if d.reachable }
}

output "load_balancers" {
  description = "Per load balancer, its variant's health module outputs: backends (every backend, healthy when every serving host that answers finds it so), hosts (serving host => reachable), vip_holders (per family, the hosts holding its VIP) and bgp_sessions (bgp variant)."
  value = merge(
    { for id, lb in local.vrrp_lbs : id => {
      backends = [for s in distinct(flatten([for h in lb.serving : [for b in try(local.read[h].frontends[lb.frontend].backends, []) : b.name]])) : {
        node    = s
        healthy = alltrue([for h in lb.serving : alltrue([for b in try(local.read[h].frontends[lb.frontend].backends, []) : b.healthy if b.name == s])])
      }]
      hosts        = { for h in lb.serving : h => local.read[h].reachable }
      vip_holders  = { for f, owner in lb.vips : f => sort([for h, d in local.read : h if try(d.vips[owner].held, false)]) }
      bgp_sessions = null
    } },
    { for id, lb in local.l4_lbs : id => {
      backends = [for s in distinct(flatten([for h in lb.serving : [for b in try(local.read[h].l4_frontends[lb.frontend].backends, []) : b.name]])) : {
        node    = s
        healthy = alltrue([for h in lb.serving : alltrue([for b in try(local.read[h].l4_frontends[lb.frontend].backends, []) : b.healthy if b.name == s])])
      }]
      hosts        = { for h in lb.serving : h => local.read[h].reachable }
      vip_holders  = { for f, owner in lb.vips : f => sort([for h, d in local.read : h if try(d.vips[owner].held, false)]) }
      bgp_sessions = null
    } },
    { for id, lb in local.bgp_lbs : id => {
      backends = [for s in distinct(flatten([for h, d in local.read : [for b in try(d.frontends[lb.frontend].backends, []) : b.name]])) : {
        node    = s
        healthy = alltrue([for h, d in local.read : alltrue([for b in try(d.frontends[lb.frontend].backends, []) : b.healthy if b.name == s])])
      }]
      hosts        = { for h, d in local.read : h => d.reachable }
      vip_holders  = null
      bgp_sessions = local.bgp_sessions
    } },
  )
}
