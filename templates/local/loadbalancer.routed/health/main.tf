# Backend health of the routed VIP (tfccm.io/Degraded): tfccm plans this
# root module with the load balancer's own inputs (../tfccm.auto.tfvars)
# every health interval and reads its `backends` output. It only reads:
# which next hops the cloud's router routes the VIP to, through lbhost's
# data source, named after the nodes that have those addresses.
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

variable "nodes" {
  type = list(object({
    name      = string
    addresses = list(object({ type = string, address = string }))
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

data "lbhost_backend_health" "vip" {
  routed_vip = "${var.cluster_name}_${var.load_balancer_id}"
}

locals {
  # Next hop address -> the node(s) with that InternalIP.
  names = { for n in var.nodes : n.name => [for a in n.addresses : a.address if a.type == "InternalIP"] }
}

output "backends" {
  description = "Every next hop, by node name, and whether the router routes the VIP to it."
  value = [for b in data.lbhost_backend_health.vip.backends : {
    node    = try([for name, addrs in local.names : name if contains(addrs, b.address)][0], b.address)
    healthy = b.healthy
  }]
}
