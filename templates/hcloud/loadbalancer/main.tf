# A Hetzner Cloud load balancer for one Service: the load balancer, one
# service (listener) per Service port and one server target per node.

locals {
  ipv4    = contains(var.service.ip_families, "IPv4")
  ipv6    = contains(var.service.ip_families, "IPv6")
  network = var.settings.network_id != null

  # Nodes become server targets by their providerID, which the hcloud
  # cloud-controller-manager and tfccm's hcloud instances.hcl both write as
  # hcloud://<server id>. Nodes without a providerID are not initialized yet.
  servers = {
    for n in var.nodes : n.name => tonumber(regex("^hcloud://([0-9]+)$", n.provider_id)[0])
    if n.provider_id != null && can(regex("^hcloud://[0-9]+$", coalesce(n.provider_id, "-")))
  }
  foreign_nodes = [
    for n in var.nodes : "${n.name} (${n.provider_id})"
    if n.provider_id != null && !can(regex("^hcloud://[0-9]+$", coalesce(n.provider_id, "-")))
  ]
  unsupported_ports = [for p in var.service.ports : "${p.port}/${p.protocol}" if p.protocol != "TCP"]

  http_check = contains(["HTTP", "HTTPS"], var.health_check.protocol)
}

resource "hcloud_load_balancer" "this" {
  name               = var.load_balancer_name
  load_balancer_type = var.settings.load_balancer_type
  location           = var.settings.location
  network_zone       = var.settings.location == null ? var.settings.network_zone : null
  labels = merge(var.settings.labels, {
    "tfccm.io/cluster"           = var.cluster_name
    "tfccm.io/service-namespace" = var.service.namespace
    "tfccm.io/service-name"      = var.service.name
  })

  algorithm {
    type = var.settings.algorithm
  }

  lifecycle {
    precondition {
      condition     = length(local.unsupported_ports) == 0
      error_message = "spec.ports: Hetzner Cloud load balancers forward TCP only; unsupported: ${join(", ", local.unsupported_ports)}."
    }
    precondition {
      condition     = length(var.service.source_ranges) == 0
      error_message = "spec.loadBalancerSourceRanges: Hetzner Cloud load balancers cannot restrict clients by source address; remove the ranges (filter on the nodes with a firewall instead)."
    }
    precondition {
      condition     = var.service.session_affinity != "ClientIP"
      error_message = "spec.sessionAffinity: ClientIP is not possible with Hetzner Cloud TCP load balancers (algorithms: round_robin, least_connections)."
    }
    precondition {
      condition     = !var.service.internal || local.network
      error_message = "tfccm.io/internal: an internal Hetzner Cloud load balancer lives in a private network; set settings.network_id."
    }
    precondition {
      condition     = var.service.load_balancer_ip == null || var.service.internal
      error_message = "spec.loadBalancerIP: Hetzner Cloud assigns public load balancer addresses itself; a requested IP is possible only for an internal load balancer (tfccm.io/internal), as its private network address."
    }
    precondition {
      condition     = var.service.shared_ip == null
      error_message = "tfccm.io/allow-shared-ip: every Hetzner Cloud load balancer has addresses of its own, and Services cannot share them; put the ports on one Service."
    }
    precondition {
      condition     = !(var.service.internal && local.ipv6)
      error_message = "spec.ipFamilies: an internal Hetzner Cloud load balancer has a private IPv4 address only (private networks are IPv4); IPv6 is not possible."
    }
    precondition {
      condition     = length(local.foreign_nodes) == 0
      error_message = "Nodes whose providerID is not hcloud://<server id> cannot be Hetzner Cloud load balancer targets: ${join(", ", local.foreign_nodes)}."
    }
  }
}

# The private network attachment: for internal load balancers (public
# interface off, the requested IP if any) and to reach targets privately.
resource "hcloud_load_balancer_network" "this" {
  count = local.network ? 1 : 0

  load_balancer_id        = tonumber(hcloud_load_balancer.this.id)
  network_id              = var.settings.network_id
  ip                      = var.service.internal ? var.service.load_balancer_ip : null
  enable_public_interface = !var.service.internal
}

resource "hcloud_load_balancer_service" "port" {
  for_each = { for p in var.service.ports : tostring(p.port) => p }

  load_balancer_id = hcloud_load_balancer.this.id
  protocol         = "tcp"
  listen_port      = each.value.port
  destination_port = each.value.node_port
  proxyprotocol    = var.service.proxy_protocol

  # Nodes are health-checked on kube-proxy's /healthz, or for
  # externalTrafficPolicy: Local on the Service's healthCheckNodePort, which
  # fails on nodes without a ready endpoint.
  health_check {
    protocol = local.http_check ? "http" : "tcp"
    port     = var.health_check.port
    interval = var.settings.health_check_interval
    timeout  = var.settings.health_check_timeout
    retries  = var.settings.health_check_retries

    dynamic "http" {
      for_each = local.http_check ? [var.health_check] : []
      content {
        path         = http.value.path
        tls          = http.value.protocol == "HTTPS"
        status_codes = ["2??"]
      }
    }
  }
}

resource "hcloud_load_balancer_target" "node" {
  for_each = local.servers

  type             = "server"
  load_balancer_id = tonumber(hcloud_load_balancer.this.id)
  server_id        = each.value
  use_private_ip   = local.network && var.settings.use_private_ip

  # Private targets need the load balancer attached to the network first.
  depends_on = [hcloud_load_balancer_network.this]
}
