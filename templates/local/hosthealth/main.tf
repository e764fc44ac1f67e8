# Hosts health (tfccm.io/Degraded of every load balancer at once): tfccm
# refreshes this root module once per health interval with every applied
# load balancer of the set (var.load_balancers, by load balancer id) and
# reports each one's entry of the `load_balancers` output as it would its
# own health module's outputs. It reads the cloud namespace once
# (lbhost_host_health): every HAProxy frontend's servers and every layer-4
# load balancer's forwarded backends. The routed variant is not read here:
# it gets no entry, so its own health module reads it.
terraform {
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
    module  = string
    service = object({ ip_families = list(string) })
  }))
}

variable "settings" {
  type = object({
    state_dir   = string
    cloud_netns = string
  })
}

provider "lbhost" {
  netns      = var.settings.cloud_netns
  config_dir = var.settings.state_dir
}

locals {
  haproxy = { for id, lb in var.load_balancers : id => lb if lb.module == "loadbalancer" }
  l4      = { for id, lb in var.load_balancers : id => lb if lb.module == "loadbalancer.l4" }
}

data "lbhost_host_health" "cloud" {
  reads = concat(length(local.haproxy) > 0 ? ["haproxy"] : [], length(local.l4) > 0 ? ["l4"] : [])
}

output "load_balancers" {
  description = "Per load balancer read here, its health module's outputs: backends (node, healthy), as ../loadbalancer/health and ../loadbalancer.l4/health output them."
  value = merge(
    # The IPv4 frontend when the Service has one (both families' frontends
    # have the same backends), else the IPv6 one.
    { for id, lb in local.haproxy : id => {
      backends = [for b in try(data.lbhost_host_health.cloud.frontends["${var.cluster_name}_${id}${contains(lb.service.ip_families, "IPv4") ? "" : ".6"}"].backends, []) : { node = b.name, healthy = b.healthy }]
    } },
    { for id, lb in local.l4 : id => {
      backends = [for b in try(data.lbhost_host_health.cloud.l4_frontends["${var.cluster_name}_${id}"].backends, []) : { node = b.name, healthy = b.healthy }]
    } },
  )
}
