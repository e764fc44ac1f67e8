# Backend health of the load balancer (tfccm.io/Degraded): tfccm plans this
# root module with the load balancer's own inputs (../tfccm.auto.tfvars)
# every health interval and reads its `backends` output. It only reads,
# through lbhost's data source: the backends the cloud's lbhost-router
# forwards new connections to (its nftables DNAT targets, which are the
# nodes passing their health check).
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
  l4_frontend = "${var.cluster_name}_${var.load_balancer_id}"
}

output "backends" {
  description = "Every backend (node) and whether the layer-4 load balancer forwards to it."
  value       = [for b in data.lbhost_backend_health.lb.backends : { node = b.name, healthy = b.healthy }]
}
