# A Google Cloud regional passthrough Network Load Balancer for one Service
# (external, or internal with tfccm.io/internal): a regional address, one
# forwarding rule per protocol, one backend service per protocol over zonal
# GCE_VM_IP network endpoint groups holding the node instances, a regional
# health check and the firewall rules that let clients and Google's health
# checkers reach the nodes.
#
# Passthrough: packets reach the nodes unchanged (destination = the load
# balancer address and the Service port), where kube-proxy picks them up, so
# the firewall opens the Service ports, not the node ports, and ip_mode is VIP.

locals {
  scheme = var.service.internal ? "INTERNAL" : "EXTERNAL"

  # Nodes become network endpoints by their providerID, which the GCE
  # cloud-controller-manager and this set's instances.hcl write as
  # gce://<project>/<zone>/<instance name>. Nodes without a providerID are
  # not initialized yet.
  gce_id = "^gce://([a-z0-9.:-]+)/([a-z0-9-]+)/([a-z0-9-]+)$"
  instances = {
    for n in var.nodes : n.name => {
      project = regex(local.gce_id, n.provider_id)[0]
      zone    = regex(local.gce_id, n.provider_id)[1]
      name    = regex(local.gce_id, n.provider_id)[2]
    } if n.provider_id != null && can(regex(local.gce_id, coalesce(n.provider_id, "-")))
  }
  foreign_nodes = [
    for n in var.nodes : "${n.name} (${n.provider_id})"
    if n.provider_id != null && !can(regex(local.gce_id, coalesce(n.provider_id, "-")))
  ]
  zones = toset([for i in local.instances : i.zone])

  # One forwarding rule and backend service per protocol; a rule takes up to
  # five ports, more make it forward all ports (the firewall still opens
  # only the Service's).
  protocols         = toset([for p in var.service.ports : p.protocol])
  ports             = { for proto in local.protocols : proto => sort(distinct([for p in var.service.ports : tostring(p.port) if p.protocol == proto])) }
  unsupported_ports = [for p in var.service.ports : "${p.port}/${p.protocol}" if !contains(["TCP", "UDP"], p.protocol)]

  # Google's health checkers; the external ranges are those of backend
  # service-based external passthrough load balancers.
  health_check_ranges = var.service.internal ? ["35.191.0.0/16", "130.211.0.0/22"] : ["35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"]

  # Google takes a literal internal address on one forwarding rule only;
  # internal rules share an address when it is a reserved address with
  # purpose SHARED_LOADBALANCER_VIP. So a requested internal IP used by the
  # TCP and the UDP rule is reserved here; one used by a single rule is
  # used as is.
  #
  # An address shared with other Services (tfccm.io/allow-shared-ip) is
  # never reserved here: the Service that reserved it could not be deleted
  # while the others' rules use it. It is reserved by you: a static
  # regional address for an external load balancer (several external rules
  # share one when their protocol and ports differ), one with purpose
  # SHARED_LOADBALANCER_VIP for an internal one (up to ten rules).
  shared             = var.service.shared_ip != null
  shared_internal_ip = var.service.internal && var.service.load_balancer_ip != null && length(local.protocols) > 1 && !local.shared
  reserve            = var.service.load_balancer_ip == null || local.shared_internal_ip
  # A rule with more than five ports takes all ports of its protocol on
  # the address, leaving none to share.
  all_ports_protocols = [for proto, ports in local.ports : proto if length(ports) > 5]
  address             = local.reserve ? google_compute_address.this[0].address : var.service.load_balancer_ip
  labels = merge(var.settings.labels, {
    "tfccm-cluster" = var.cluster_name
  })
  description = "Kubernetes Service ${var.service.namespace}/${var.service.name} of cluster ${var.cluster_name} (tfccm)"
}

# The load balancer's address, shared by the per-protocol forwarding rules.
# A requested spec.loadBalancerIP is used as is: for an external load
# balancer it must be a static address already reserved in the region; an
# internal one shared by TCP and UDP rules is reserved here (so it must not
# be reserved already), unless other Services share it (see local.shared).
resource "google_compute_address" "this" {
  count = local.reserve ? 1 : 0

  project      = var.settings.project
  region       = var.settings.region
  name         = var.adopt == null ? var.load_balancer_name : var.adopt.id
  description  = local.description
  address      = var.service.load_balancer_ip
  address_type = local.scheme
  subnetwork   = var.service.internal ? var.settings.subnetwork : null
  purpose      = var.service.internal ? "SHARED_LOADBALANCER_VIP" : null
  network_tier = var.service.internal ? null : var.settings.network_tier
  labels       = local.labels

  lifecycle {
    # An adopted address keeps the name and description it was reserved
    # with (Google cannot change either in place), also once the adoption
    # applied and later plans run without var.adopt.
    ignore_changes = [name, description]
  }
}

resource "google_compute_network_endpoint_group" "zone" {
  for_each = local.zones

  project               = var.settings.project
  zone                  = each.key
  name                  = "${var.load_balancer_name}-${each.key}"
  description           = local.description
  network_endpoint_type = "GCE_VM_IP"
  network               = var.settings.network
  subnetwork            = var.settings.subnetwork
}

# The node instances of each zone; a node joining or leaving changes one
# endpoint of one group.
resource "google_compute_network_endpoints" "zone" {
  for_each = local.zones

  project                = var.settings.project
  zone                   = each.key
  network_endpoint_group = google_compute_network_endpoint_group.zone[each.key].name

  dynamic "network_endpoints" {
    for_each = { for node, i in local.instances : node => i if i.zone == each.key }
    content {
      instance = network_endpoints.value.name
    }
  }
}

# Nodes are health-checked on kube-proxy's /healthz, or for
# externalTrafficPolicy: Local on the Service's healthCheckNodePort, which
# fails on nodes without a ready endpoint.
resource "google_compute_region_health_check" "this" {
  project             = var.settings.project
  region              = var.settings.region
  name                = var.load_balancer_name
  description         = local.description
  check_interval_sec  = var.settings.check_interval
  timeout_sec         = var.settings.check_timeout
  healthy_threshold   = var.settings.healthy_threshold
  unhealthy_threshold = var.settings.unhealthy_threshold

  # Checked here: the health check exists whatever the Service asks for.
  lifecycle {
    precondition {
      condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.load_balancer_name))
      error_message = "tfccm.io/name: Google Cloud resource names start with a letter; ${var.load_balancer_name} does not (set tfccm.io/name or a cluster_name starting with a letter)."
    }
    precondition {
      condition     = length(local.unsupported_ports) == 0
      error_message = "spec.ports: Google passthrough load balancers forward TCP and UDP only here; unsupported: ${join(", ", local.unsupported_ports)}."
    }
    precondition {
      condition     = var.service.ip_families == tolist(["IPv4"])
      error_message = "spec.ipFamilies: this set builds IPv4 load balancers only (IPv6 forwarding rules need a dual-stack subnetwork); use IPv4."
    }
    precondition {
      condition     = !var.service.proxy_protocol
      error_message = "tfccm.io/proxy-protocol: a passthrough load balancer does not touch packets, so it cannot send the PROXY protocol (clients' addresses reach the nodes unchanged anyway)."
    }
    precondition {
      condition     = !local.shared || var.service.load_balancer_ip != null
      error_message = "tfccm.io/allow-shared-ip: Services share a Google address you reserved: choose it on each of them with tfccm.io/load-balancer-ips."
    }
    precondition {
      condition     = !local.shared || length(local.all_ports_protocols) == 0
      error_message = "tfccm.io/allow-shared-ip: a forwarding rule takes up to five ports; with more (here ${join(", ", local.all_ports_protocols)}) it takes every port of its protocol on the address and leaves none to share. Use at most five ports per protocol on a Service that shares its address."
    }
    precondition {
      condition     = length(local.foreign_nodes) == 0
      error_message = "Nodes whose providerID is not gce://<project>/<zone>/<instance> cannot be Google load balancer backends: ${join(", ", local.foreign_nodes)}."
    }
  }

  dynamic "http_health_check" {
    for_each = var.health_check.protocol == "HTTP" ? [var.health_check] : []
    content {
      port         = http_health_check.value.port
      request_path = http_health_check.value.path
    }
  }
  dynamic "https_health_check" {
    for_each = var.health_check.protocol == "HTTPS" ? [var.health_check] : []
    content {
      port         = https_health_check.value.port
      request_path = https_health_check.value.path
    }
  }
  dynamic "tcp_health_check" {
    for_each = var.health_check.protocol == "TCP" ? [var.health_check] : []
    content {
      port = tcp_health_check.value.port
    }
  }
}

resource "google_compute_region_backend_service" "protocol" {
  for_each = local.protocols

  project               = var.settings.project
  region                = var.settings.region
  name                  = "${var.load_balancer_name}-${lower(each.key)}"
  description           = local.description
  protocol              = each.key
  load_balancing_scheme = local.scheme
  network               = var.service.internal ? var.settings.network : null
  health_checks         = [google_compute_region_health_check.this.id]
  session_affinity      = var.service.session_affinity == "ClientIP" ? "CLIENT_IP" : "NONE"

  dynamic "backend" {
    for_each = local.zones
    content {
      group          = google_compute_network_endpoint_group.zone[backend.key].id
      balancing_mode = "CONNECTION"
    }
  }

  depends_on = [google_compute_network_endpoints.zone]
}

resource "google_compute_forwarding_rule" "protocol" {
  for_each = local.protocols

  project               = var.settings.project
  region                = var.settings.region
  name                  = "${var.load_balancer_name}-${lower(each.key)}"
  description           = local.description
  ip_address            = local.address
  ip_protocol           = each.key
  load_balancing_scheme = local.scheme
  backend_service       = google_compute_region_backend_service.protocol[each.key].id
  ports                 = length(local.ports[each.key]) <= 5 ? local.ports[each.key] : null
  all_ports             = length(local.ports[each.key]) > 5 ? true : null
  network               = var.service.internal ? var.settings.network : null
  subnetwork            = var.service.internal ? var.settings.subnetwork : null
  allow_global_access   = var.service.internal ? var.settings.allow_global_access : null
  network_tier          = var.service.internal ? null : var.settings.network_tier
  labels                = local.labels
}

# Clients (spec.loadBalancerSourceRanges, everyone when empty) to the
# Service ports on the nodes.
resource "google_compute_firewall" "clients" {
  project       = var.settings.project
  name          = "${var.load_balancer_name}-clients"
  description   = local.description
  network       = var.settings.network
  direction     = "INGRESS"
  source_ranges = length(var.service.source_ranges) > 0 ? var.service.source_ranges : ["0.0.0.0/0"]
  target_tags   = length(var.settings.node_tags) > 0 ? var.settings.node_tags : null

  dynamic "allow" {
    for_each = local.ports
    content {
      protocol = lower(allow.key)
      ports    = allow.value
    }
  }
}

# Google's health checkers to the health check port.
resource "google_compute_firewall" "health_checks" {
  project       = var.settings.project
  name          = "${var.load_balancer_name}-hc"
  description   = local.description
  network       = var.settings.network
  direction     = "INGRESS"
  source_ranges = local.health_check_ranges
  target_tags   = length(var.settings.node_tags) > 0 ? var.settings.node_tags : null

  allow {
    protocol = "tcp"
    ports    = [tostring(var.health_check.port)]
  }
}
