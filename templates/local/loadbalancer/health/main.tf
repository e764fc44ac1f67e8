# Backend health of the load balancer (tfccm.io/Degraded): tfccm plans this
# root module with the load balancer's own inputs (../tfccm.auto.tfvars)
# every health interval and reads its `backends` output. It only reads: the
# running HAProxy's server states, through lbhost's data source.
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

variable "load_balancer_id" {
  type = string
}

variable "service" {
  # The part of ../variables.tf's service type this module reads.
  type = object({ ip_families = list(string) })
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

data "lbhost_backend_health" "lb" {
  # The IPv4 frontend when the Service has one (both families' frontends
  # have the same backends), else the IPv6 one.
  frontend = "${var.cluster_name}_${var.load_balancer_id}${contains(var.service.ip_families, "IPv4") ? "" : ".6"}"
}

output "backends" {
  description = "Every backend (node) and whether HAProxy finds it healthy."
  value       = [for b in data.lbhost_backend_health.lb.backends : { node = b.name, healthy = b.healthy }]
}
