# The local cloud's layer-4 load balancer: a VIP claimed in the cloud netns
# (lbhost_vip) and an lbhost_l4_frontend: the cloud's lbhost-router
# health-checks the nodes and keeps nftables rules that DNAT each VIP:port
# (TCP, UDP, SCTP where the kernel has it) to a healthy node's NodePort,
# spread per connection (numgen; jhash of the client address for ClientIP
# affinity), conntrack keeping each connection on its node. The cloud
# netns is the nodes' gateway, so replies come back through it without
# SNAT: the nodes (and with externalTrafficPolicy: Local the pods) see the
# client's own address.
provider "lbhost" {
  netns      = var.settings.cloud_netns
  config_dir = var.settings.state_dir
}

locals {
  owner = "${var.cluster_name}_${var.load_balancer_id}"

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

resource "lbhost_l4_frontend" "lb" {
  name     = local.owner
  address  = lbhost_vip.vip.address
  ports    = [for p in var.service.ports : { protocol = p.protocol, port = p.port, node_port = p.node_port }]
  backends = local.backends

  # kube-proxy's health endpoint, or for externalTrafficPolicy: Local the
  # Service's healthCheckNodePort (failing on nodes without a ready
  # endpoint): a node that fails it twice gets no new connections.
  health_check = {
    protocol    = var.health_check.protocol
    port        = var.health_check.port
    path        = var.health_check.protocol == "TCP" ? null : var.health_check.path
    interval_ms = 1000
    rise        = 2
    fall        = 2
  }

  source_ranges    = length(var.service.source_ranges) > 0 ? var.service.source_ranges : null
  session_affinity = coalesce(var.service.session_affinity, "None")
}
