# The local cloud's HAProxy (in the cloud netns) through tfccm's lbhost
# provider: the VIP is claimed by the provider at apply time under the
# host's lock, the frontend is read back from HAProxy's config on every
# refresh, so drift is visible and repaired.
provider "lbhost" {
  netns      = var.settings.cloud_netns
  config_dir = var.settings.state_dir
}

locals {
  # Owner of this LB's fragment and VIP claim. '_' separates the two names
  # unambiguously: neither may contain it.
  owner = "${var.cluster_name}_${var.load_balancer_name}"

  ipv4 = "^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$"

  # Every node with an IPv4 InternalIP, at its first one.
  backends = [for n in var.nodes : {
    name    = n.name
    address = [for a in n.addresses : a.address if a.type == "InternalIP" && can(regex(local.ipv4, a.address))][0]
  } if length([for a in n.addresses : a if a.type == "InternalIP" && can(regex(local.ipv4, a.address))]) > 0]

  requested = var.service.load_balancer_ip
  pool_bits = split("/", var.settings.vip_pool)[1]
}

resource "lbhost_vip" "vip" {
  owner   = local.owner
  pool    = var.settings.vip_pool
  address = local.requested
  share   = var.service.shared_ip

  lifecycle {
    # The provider checks this too; here the message names the Service's field.
    precondition {
      condition     = local.requested == null || cidrhost("${coalesce(local.requested, "0.0.0.0")}/${local.pool_bits}", 0) == cidrhost(var.settings.vip_pool, 0)
      error_message = "The requested load balancer IP ${coalesce(local.requested, "-")} is outside the local cloud's VIP pool ${var.settings.vip_pool}."
    }
  }
}

resource "lbhost_frontend" "lb" {
  name     = local.owner
  address  = lbhost_vip.vip.address
  ports    = [for p in var.service.ports : { port = p.port, node_port = p.node_port }]
  backends = local.backends

  health_check = {
    protocol = var.health_check.protocol
    port     = var.health_check.port
    path     = var.health_check.protocol == "TCP" ? null : var.health_check.path
    interval = "1s"
    rise     = 2
    fall     = 2
  }

  source_ranges    = length(var.service.source_ranges) > 0 ? var.service.source_ranges : null
  proxy_protocol   = var.service.proxy_protocol ? "v2" : null
  session_affinity = coalesce(var.service.session_affinity, "None")
}
