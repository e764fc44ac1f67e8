# The local cloud's second load balancer kind: a routed VIP. The cloud's
# router (lbhost-router in the cloud netns) routes the VIP to the nodes that
# pass the health check (ECMP) and kube-proxy on each node serves it (the
# ingress has ip_mode = "VIP"): no proxy in the path, client addresses are
# preserved, every protocol kube-proxy serves passes, and no node port is
# needed (allocateLoadBalancerNodePorts: false works).
provider "lbhost" {
  netns      = var.settings.cloud_netns
  config_dir = var.settings.state_dir
}

locals {
  owner = "${var.cluster_name}_${var.load_balancer_id}"
  ipv4  = "^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$"

  # Every node's first IPv4 InternalIP: the next hops.
  nexthops = [for n in var.nodes : [for a in n.addresses : a.address if a.type == "InternalIP" && can(regex(local.ipv4, a.address))][0]
  if length([for a in n.addresses : a if a.type == "InternalIP" && can(regex(local.ipv4, a.address))]) > 0]

  requested = var.service.load_balancer_ip
  pool_bits = split("/", var.settings.vip_pool)[1]
}

resource "lbhost_routed_vip" "vip" {
  owner    = local.owner
  pool     = var.settings.vip_pool
  address  = local.requested
  share    = var.service.shared_ip
  nexthops = local.nexthops
  # ClientIP affinity: the router hashes the VIP's connections by client
  # address, so a client stays on one node (kube-proxy keeps it on one
  # endpoint there); otherwise by flow, spreading a client's connections.
  hash = var.service.session_affinity == "ClientIP" ? "client" : "flow"

  # kube-proxy's health endpoint (or, for externalTrafficPolicy: Local, the
  # Service's healthCheckNodePort, which fails on nodes without a ready
  # endpoint): only nodes that can serve the VIP get its traffic.
  health_check = {
    protocol    = var.health_check.protocol
    port        = var.health_check.port
    path        = var.health_check.protocol == "TCP" ? null : var.health_check.path
    interval_ms = 1000
    rise        = 2
    fall        = 2
  }

  lifecycle {
    precondition {
      condition     = local.requested == null || cidrhost("${coalesce(local.requested, "0.0.0.0")}/${local.pool_bits}", 0) == cidrhost(var.settings.vip_pool, 0)
      error_message = "The requested load balancer IP ${coalesce(local.requested, "-")} is outside the local cloud's VIP pool ${var.settings.vip_pool}."
    }
  }
}
