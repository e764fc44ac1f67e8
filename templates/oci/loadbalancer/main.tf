# An OCI Network Load Balancer for one Service: per Service port (and IP
# family) a listener and a backend set with every node as a backend, health
# checked; an NSG enforcing loadBalancerSourceRanges.

locals {
  ipv4     = contains(var.service.ip_families, "IPv4")
  ipv6     = contains(var.service.ip_families, "IPv6")
  internal = var.service.internal
  families = concat(local.ipv4 ? ["IPV4"] : [], local.ipv6 ? ["IPV6"] : [])

  # Nodes are compute instances by their providerID, which the OCI
  # cloud-controller-manager and tfccm's oci instances.hcl both write as
  # oci://<instance OCID>. Nodes without one are not initialized yet.
  instances = {
    for n in var.nodes : n.name => {
      id   = trimprefix(n.provider_id, "oci://")
      ipv6 = try([for a in n.addresses : a.address if a.type == "InternalIP" && strcontains(a.address, ":")][0], null)
    }
    if n.provider_id != null && can(regex("^oci://ocid1\\.instance\\.", coalesce(n.provider_id, "-")))
  }
  foreign_nodes = [
    for n in var.nodes : "${n.name} (${n.provider_id})"
    if n.provider_id != null && !can(regex("^oci://ocid1\\.instance\\.", coalesce(n.provider_id, "-")))
  ]
  no_ipv6_nodes = [for name, i in local.instances : name if i.ipv6 == null]

  unsupported_ports = [for p in var.service.ports : "${p.port}/${p.protocol}" if !contains(["TCP", "UDP"], p.protocol)]
  # One listener per port number: TCP and UDP on the same port share a
  # TCP_AND_UDP listener, which needs one node port.
  by_port = { for p in var.service.ports : tostring(p.port) => p... }
  ports = {
    for port, ps in local.by_port : port => {
      port      = ps[0].port
      node_port = ps[0].node_port
      protocol  = length(ps) > 1 ? "TCP_AND_UDP" : ps[0].protocol
    }
  }
  split_node_ports = [for port, ps in local.by_port : port if length(distinct([for p in ps : p.node_port])) > 1]

  # Listener/backend set keys: "<port>-<family>".
  listeners = merge([
    for port, p in local.ports : {
      for f in local.families : "${port}-${lower(f)}" => merge(p, { family = f })
    }
  ]...)
  backends = merge([
    for key, l in local.listeners : {
      for name, i in local.instances : "${key}/${name}" => { listener = key, node_port = l.node_port, family = l.family, instance = i }
    }
  ]...)

  # loadBalancerSourceRanges are enforced by an NSG in settings.vcn_id;
  # without one the load balancer's precondition refuses the Service (the
  # NSG is not planned, so the provider's "Missing required argument" for
  # vcn_id does not come first).
  source_ranges = length(var.service.source_ranges) > 0 && var.settings.vcn_id != null
  # A requested IPv6 address is refused by the load balancer's
  # precondition; the reserved-public-IP lookup (IPv4 objects only) never
  # sees it.
  requested_ipv4 = var.service.load_balancer_ip != null && !strcontains(coalesce(var.service.load_balancer_ip, "-"), ":")

  http_check = contains(["HTTP", "HTTPS"], var.health_check.protocol)
  # Passthrough: clients reach the nodes directly unless the PROXY header
  # must be added by the load balancer.
  ip_mode = var.service.proxy_protocol ? "Proxy" : "VIP"
}

# A requested public IP must be a reserved public IP of the tenancy.
data "oci_core_public_ip" "requested" {
  count      = local.requested_ipv4 && !local.internal ? 1 : 0
  ip_address = var.service.load_balancer_ip
}

resource "oci_network_load_balancer_network_load_balancer" "this" {
  compartment_id                 = var.settings.compartment_id
  subnet_id                      = var.settings.subnet_id
  display_name                   = var.load_balancer_name
  is_private                     = local.internal
  is_preserve_source_destination = false
  nlb_ip_version                 = local.ipv4 && local.ipv6 ? "IPV4_AND_IPV6" : (local.ipv6 ? "IPV6" : "IPV4")
  assigned_private_ipv4          = local.internal ? var.service.load_balancer_ip : null
  network_security_group_ids     = toset(concat(var.settings.nsg_ids, oci_core_network_security_group.source_ranges[*].id))
  freeform_tags = merge(var.settings.freeform_tags, {
    "tfccm-cluster" = var.cluster_name
    "tfccm-service" = "${var.service.namespace}/${var.service.name}"
  })

  dynamic "reserved_ips" {
    for_each = data.oci_core_public_ip.requested
    content {
      id = reserved_ips.value.id
    }
  }

  lifecycle {
    precondition {
      condition     = length(local.unsupported_ports) == 0
      error_message = "spec.ports: OCI network load balancers forward TCP and UDP only; unsupported: ${join(", ", local.unsupported_ports)}."
    }
    precondition {
      condition     = length(local.split_node_ports) == 0
      error_message = "spec.ports: TCP and UDP on the same port share one OCI listener and need the same nodePort; different on port ${join(", ", local.split_node_ports)}."
    }
    precondition {
      condition     = length(var.service.source_ranges) == 0 || var.settings.vcn_id != null
      error_message = "spec.loadBalancerSourceRanges: enforcing source ranges needs a network security group in the VCN; set settings.vcn_id."
    }
    precondition {
      condition     = var.service.load_balancer_ip == null || !strcontains(coalesce(var.service.load_balancer_ip, "-"), ":")
      error_message = "spec.loadBalancerIP: OCI network load balancers take a requested IPv4 address only (a reserved public IP, or for internal ones a private IP of the subnet)."
    }
    precondition {
      condition     = var.service.shared_ip == null
      error_message = "tfccm.io/allow-shared-ip: every OCI network load balancer has addresses of its own (a reserved public IP attaches to one), and Services cannot share them; put the ports on one Service."
    }
    precondition {
      condition     = !local.ipv6 || length(local.no_ipv6_nodes) == 0
      error_message = "spec.ipFamilies: IPv6 backends are the nodes' IPv6 InternalIPs; these nodes have none: ${join(", ", local.no_ipv6_nodes)}."
    }
    precondition {
      condition     = length(local.foreign_nodes) == 0
      error_message = "Nodes whose providerID is not oci://<instance OCID> cannot be OCI network load balancer backends: ${join(", ", local.foreign_nodes)}."
    }
  }
}

# loadBalancerSourceRanges: ingress allowed only from the ranges, on the
# Service's ports; egress to the backends (node ports and health checks).
resource "oci_core_network_security_group" "source_ranges" {
  count = local.source_ranges ? 1 : 0

  compartment_id = var.settings.compartment_id
  vcn_id         = var.settings.vcn_id
  display_name   = "${var.load_balancer_name}-sources"
}

resource "oci_core_network_security_group_security_rule" "ingress" {
  for_each = !local.source_ranges ? {} : {
    for pair in setproduct(var.service.source_ranges, var.service.ports) :
    "${pair[0]} ${pair[1].protocol}/${pair[1].port}" => { cidr = pair[0], port = pair[1].port, protocol = pair[1].protocol }
  }

  network_security_group_id = oci_core_network_security_group.source_ranges[0].id
  direction                 = "INGRESS"
  protocol                  = each.value.protocol == "TCP" ? "6" : "17"
  source                    = each.value.cidr
  source_type               = "CIDR_BLOCK"
  stateless                 = false

  dynamic "tcp_options" {
    for_each = each.value.protocol == "TCP" ? [each.value.port] : []
    content {
      destination_port_range {
        min = tcp_options.value
        max = tcp_options.value
      }
    }
  }
  dynamic "udp_options" {
    for_each = each.value.protocol == "UDP" ? [each.value.port] : []
    content {
      destination_port_range {
        min = udp_options.value
        max = udp_options.value
      }
    }
  }
}

resource "oci_core_network_security_group_security_rule" "egress" {
  for_each = !local.source_ranges ? toset([]) : toset(local.ipv6 ? ["0.0.0.0/0", "::/0"] : ["0.0.0.0/0"])

  network_security_group_id = oci_core_network_security_group.source_ranges[0].id
  direction                 = "EGRESS"
  protocol                  = "all"
  destination               = each.value
  destination_type          = "CIDR_BLOCK"
  stateless                 = false
}

resource "oci_network_load_balancer_backend_set" "port" {
  for_each = local.listeners

  network_load_balancer_id = oci_network_load_balancer_network_load_balancer.this.id
  name                     = local.listener_names[each.key]
  ip_version               = each.value.family
  # ClientIP affinity: the same client goes to the same node.
  policy             = var.service.session_affinity == "ClientIP" ? "TWO_TUPLE" : "FIVE_TUPLE"
  is_preserve_source = true

  # Nodes are health-checked on kube-proxy's /healthz, or for
  # externalTrafficPolicy: Local on the Service's healthCheckNodePort, which
  # fails on nodes without a ready endpoint.
  health_checker {
    protocol           = var.health_check.protocol
    port               = var.health_check.port
    url_path           = local.http_check ? var.health_check.path : null
    return_code        = local.http_check ? 200 : null
    interval_in_millis = var.settings.health_check_millis
    retries            = var.settings.health_check_retries
  }
}

resource "oci_network_load_balancer_backend" "node" {
  for_each = local.backends

  network_load_balancer_id = oci_network_load_balancer_network_load_balancer.this.id
  backend_set_name         = oci_network_load_balancer_backend_set.port[each.value.listener].name
  port                     = each.value.node_port
  # IPv4: the instance itself (its primary private IP); IPv6: the node's
  # IPv6 InternalIP.
  target_id  = each.value.family == "IPV4" ? each.value.instance.id : null
  ip_address = each.value.family == "IPV6" ? each.value.instance.ipv6 : null
}

resource "oci_network_load_balancer_listener" "port" {
  for_each = local.listeners

  network_load_balancer_id = oci_network_load_balancer_network_load_balancer.this.id
  name                     = local.listener_names[each.key]
  default_backend_set_name = oci_network_load_balancer_backend_set.port[each.key].name
  port                     = each.value.port
  protocol                 = each.value.protocol
  ip_version               = each.value.family
  is_ppv2enabled           = var.service.proxy_protocol
}
