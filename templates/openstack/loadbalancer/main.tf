# An OpenStack Octavia load balancer for one Service: the load balancer (its
# VIP port), one listener + pool + health monitor per Service port, the nodes
# as the pool's members and, for public load balancers, a floating IP on the
# VIP port. Written the way cloud-provider-openstack builds them.

locals {
  ipv6 = contains(var.service.ip_families, "IPv6")
  # Octavia gives a load balancer one VIP; a floating IP (Neutron's NAT) is
  # IPv4 only, so an IPv6 VIP is reached directly (routed, no NAT).
  floating = !var.service.internal && !local.ipv6

  # Listeners are keyed "<protocol>-<port>": Octavia allows TCP and UDP
  # listeners on the same port number.
  ports = { for p in var.service.ports : "${lower(p.protocol)}-${p.port}" => p }

  # PROXY (v1) pools make the load balancer send the PROXY header on TCP;
  # UDP and SCTP pools carry no header.
  pool_protocol = { for k, p in local.ports : k => p.protocol == "TCP" && var.service.proxy_protocol ? "PROXY" : p.protocol }

  # Members are the nodes' InternalIPs of the Service's IP family (what
  # cloud-provider-openstack uses), health-checked on the health check port.
  member_address = {
    for n in var.nodes : n.name => try([
      for a in n.addresses : a.address if a.type == "InternalIP" && strcontains(a.address, ":") == local.ipv6
    ][0], null)
  }
  members       = { for name, a in local.member_address : name => a if a != null }
  missing_nodes = [for name, a in local.member_address : name if a == null]

  unsupported_ports = [for p in var.service.ports : "${p.port}/${p.protocol}" if !contains(["TCP", "UDP", "SCTP"], p.protocol)]
  proxy_non_tcp     = [for p in var.service.ports : "${p.port}/${p.protocol}" if var.service.proxy_protocol && p.protocol != "TCP"]

  # The ovn provider driver (loadbalancer_provider = "ovn") balances packets
  # in OVN: no HTTP monitors and no member monitor options (it refuses
  # both), TCP and UDP-CONNECT monitors on the member's own port (the node
  # port), SOURCE_IP_PORT only, no allowed_cidrs, no PROXY pools. Monitors
  # are built the way cloud-provider-openstack builds them for ovn.
  ovn       = var.settings.loadbalancer_provider == "ovn"
  lb_method = coalesce(var.settings.lb_method, local.ovn ? "SOURCE_IP_PORT" : "ROUND_ROBIN")
  # HTTP monitors on UDP pools need Octavia API 2.16; an older API gets
  # UDP-CONNECT monitors on the node port for UDP pools.
  http_on_udp = tonumber(split(".", var.settings.octavia_api_version)[1]) >= 16

  # Per listener: the monitor type and whether it probes the health check
  # port (the members' monitor_port) or the member's own port.
  monitor = {
    for k, p in local.ports : k => (
      local.ovn ? { type = p.protocol == "UDP" ? "UDP-CONNECT" : p.protocol, health_port = false } :
      p.protocol == "UDP" && var.health_check.protocol != "TCP" && !local.http_on_udp ? { type = "UDP-CONNECT", health_port = false } :
      { type = var.health_check.protocol, health_port = true }
    )
  }
}

resource "openstack_lb_loadbalancer_v2" "this" {
  name                  = var.load_balancer_name
  description           = "Kubernetes Service ${var.service.namespace}/${var.service.name} of cluster ${var.cluster_name} (tfccm)"
  vip_subnet_id         = var.settings.subnet_id
  vip_network_id        = var.settings.subnet_id == null ? var.settings.network_id : null
  vip_address           = var.service.internal ? var.service.load_balancer_ip : null
  flavor_id             = var.settings.flavor_id
  availability_zone     = var.settings.availability_zone
  loadbalancer_provider = var.settings.loadbalancer_provider
  tags = toset(concat(var.settings.tags, [
    "kube_service_${var.cluster_name}_${var.service.namespace}_${var.service.name}",
  ]))

  lifecycle {
    precondition {
      condition     = length(local.unsupported_ports) == 0
      error_message = "spec.ports: Octavia listeners take TCP, UDP and SCTP only; unsupported: ${join(", ", local.unsupported_ports)}."
    }
    precondition {
      condition     = length(local.proxy_non_tcp) == 0
      error_message = "tfccm.io/proxy-protocol: the PROXY protocol is sent on TCP connections only; these ports are not TCP: ${join(", ", local.proxy_non_tcp)}."
    }
    precondition {
      condition     = length(var.service.ip_families) == 1
      error_message = "spec.ipFamilies: an Octavia load balancer has one VIP address; dual-stack is not possible (use one Service per family)."
    }
    precondition {
      condition     = !local.floating || var.service.load_balancer_ip != null || var.settings.floating_network != null
      error_message = "A public OpenStack load balancer gets a floating IP from an external network; set settings.floating_network (its name), or make the Service internal with tfccm.io/internal."
    }
    precondition {
      condition     = var.service.shared_ip == null
      error_message = "tfccm.io/allow-shared-ip: every Octavia load balancer has a VIP of its own (a floating IP attaches to one), and Services cannot share it; put the ports on one Service."
    }
    precondition {
      condition     = !local.ovn || length(var.service.source_ranges) == 0
      error_message = "spec.loadBalancerSourceRanges: the ovn provider does not enforce listener allowed_cidrs (Octavia VIP ACLs); remove the ranges, filter on the nodes (security groups), or use the amphora provider."
    }
    precondition {
      condition     = !local.ovn || !var.service.proxy_protocol
      error_message = "tfccm.io/proxy-protocol: the ovn provider balances packets (L4) and cannot send the PROXY protocol (clients' addresses reach the nodes unchanged)."
    }
    precondition {
      condition     = !local.ovn || local.lb_method == "SOURCE_IP_PORT"
      error_message = "settings.lb_method: the ovn provider balances by SOURCE_IP_PORT only; unset lb_method or set SOURCE_IP_PORT."
    }
    precondition {
      condition     = length(local.missing_nodes) == 0
      error_message = "Pool members are the nodes' ${local.ipv6 ? "IPv6" : "IPv4"} InternalIPs; these nodes have none: ${join(", ", local.missing_nodes)}."
    }
    precondition {
      condition     = var.service.load_balancer_ip == null || !local.ipv6 || var.service.internal
      error_message = "spec.loadBalancerIP: an IPv6 load balancer has no floating IP; a requested address is its VIP, which needs tfccm.io/internal (the VIP is then the address)."
    }
  }
}

resource "openstack_lb_listener_v2" "port" {
  for_each = local.ports

  name            = "${var.load_balancer_name}-${each.key}"
  loadbalancer_id = openstack_lb_loadbalancer_v2.this.id
  protocol        = each.value.protocol
  protocol_port   = each.value.port
  # Octavia drops connections from other sources at the listener.
  allowed_cidrs = length(var.service.source_ranges) > 0 ? var.service.source_ranges : null
}

resource "openstack_lb_pool_v2" "port" {
  for_each = local.ports

  name        = "${var.load_balancer_name}-${each.key}"
  listener_id = openstack_lb_listener_v2.port[each.key].id
  protocol    = local.pool_protocol[each.key]
  lb_method   = local.lb_method

  dynamic "persistence" {
    for_each = var.service.session_affinity == "ClientIP" ? [1] : []
    content {
      type = "SOURCE_IP"
    }
  }
}

# All members of a pool in one resource: Octavia's batch member update, one
# API call (and one load balancer PENDING_UPDATE cycle) per change, as
# cloud-provider-openstack does, instead of one call per node.
resource "openstack_lb_members_v2" "port" {
  for_each = local.ports

  pool_id = openstack_lb_pool_v2.port[each.key].id

  dynamic "member" {
    for_each = local.members
    content {
      name          = member.key
      address       = member.value
      protocol_port = each.value.node_port
      subnet_id     = var.settings.member_subnet_id != null ? var.settings.member_subnet_id : var.settings.subnet_id
      # Nodes are health-checked on kube-proxy's /healthz, or for
      # externalTrafficPolicy: Local on the Service's healthCheckNodePort,
      # which fails on nodes without a ready endpoint. Monitors that probe
      # the node port (ovn, UDP-CONNECT) take no monitor_port: the provider
      # sends it whenever it is set, and ovn refuses it.
      monitor_port = local.monitor[each.key].health_port ? var.health_check.port : null
    }
  }
}

resource "openstack_lb_monitor_v2" "port" {
  for_each = local.ports

  name             = "${var.load_balancer_name}-${each.key}"
  pool_id          = openstack_lb_pool_v2.port[each.key].id
  type             = local.monitor[each.key].type
  delay            = var.settings.monitor_delay
  timeout          = var.settings.monitor_timeout
  max_retries      = var.settings.monitor_max_retries
  max_retries_down = var.settings.monitor_retries_down
  url_path         = contains(["HTTP", "HTTPS"], local.monitor[each.key].type) ? var.health_check.path : null
  http_method      = contains(["HTTP", "HTTPS"], local.monitor[each.key].type) ? "GET" : null
  expected_codes   = contains(["HTTP", "HTTPS"], local.monitor[each.key].type) ? "200" : null

  depends_on = [openstack_lb_members_v2.port]
}

# Public load balancers: a floating IP associated with the VIP port. A
# requested spec.loadBalancerIP is a floating IP the project already holds
# (allocated beforehand, as cloud-provider-openstack expects; non-admin
# users cannot allocate a chosen address): it is looked up and associated,
# and stays with the project when the Service goes. Otherwise a new one is
# allocated from settings.floating_network and released with the Service.
data "openstack_networking_floatingip_v2" "requested" {
  count = local.floating && var.service.load_balancer_ip != null ? 1 : 0

  address = var.service.load_balancer_ip
}

# Without settings.floating_network the load balancer's precondition refuses
# the Service; the floating IP is then not planned (its pool is required).
resource "openstack_networking_floatingip_v2" "this" {
  count = local.floating && var.service.load_balancer_ip == null && var.settings.floating_network != null ? 1 : 0

  pool        = var.settings.floating_network
  description = "Kubernetes Service ${var.service.namespace}/${var.service.name} of cluster ${var.cluster_name} (tfccm)"
}

resource "openstack_networking_floatingip_associate_v2" "this" {
  count = local.floating ? 1 : 0

  floating_ip = var.service.load_balancer_ip != null ? data.openstack_networking_floatingip_v2.requested[0].address : openstack_networking_floatingip_v2.this[0].address
  port_id     = openstack_lb_loadbalancer_v2.this.vip_port_id
}
