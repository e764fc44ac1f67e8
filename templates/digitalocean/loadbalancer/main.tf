# A DigitalOcean regional load balancer for one Service: one forwarding rule
# per Service port to the nodes' node ports, a health check, and the nodes'
# Droplets as targets.

locals {
  ipv4     = contains(var.service.ip_families, "IPv4")
  ipv6     = contains(var.service.ip_families, "IPv6")
  internal = var.service.internal

  # Nodes are Droplets by their providerID, which the DigitalOcean
  # cloud-controller-manager and tfccm's digitalocean instances.hcl both
  # write as digitalocean://<droplet id>. Nodes without one are not
  # initialized yet.
  droplets = [
    for n in var.nodes : tonumber(regex("^digitalocean://([0-9]+)$", n.provider_id)[0])
    if n.provider_id != null && can(regex("^digitalocean://[0-9]+$", coalesce(n.provider_id, "-")))
  ]
  foreign_nodes = [
    for n in var.nodes : "${n.name} (${n.provider_id})"
    if n.provider_id != null && !can(regex("^digitalocean://[0-9]+$", coalesce(n.provider_id, "-")))
  ]
  unsupported_ports = [for p in var.service.ports : "${p.port}/${p.protocol}" if !contains(["TCP", "UDP"], p.protocol)]
  udp_ports         = [for p in var.service.ports : p.port if p.protocol == "UDP"]
}

resource "digitalocean_loadbalancer" "this" {
  name                             = var.load_balancer_name
  type                             = "REGIONAL"
  region                           = var.settings.region
  vpc_uuid                         = var.settings.vpc_uuid
  project_id                       = var.settings.project_id
  size_unit                        = var.settings.size_unit
  network                          = local.internal ? "INTERNAL" : "EXTERNAL"
  network_stack                    = local.ipv6 ? "DUALSTACK" : "IPV4"
  enable_proxy_protocol            = var.service.proxy_protocol
  disable_lets_encrypt_dns_records = var.settings.disable_lets_encrypt_dns
  droplet_ids                      = local.droplets

  dynamic "forwarding_rule" {
    for_each = var.service.ports
    content {
      entry_protocol  = lower(forwarding_rule.value.protocol)
      entry_port      = forwarding_rule.value.port
      target_protocol = lower(forwarding_rule.value.protocol)
      target_port     = forwarding_rule.value.node_port
    }
  }

  # Nodes are health-checked on kube-proxy's /healthz, or for
  # externalTrafficPolicy: Local on the Service's healthCheckNodePort, which
  # fails on nodes without a ready endpoint. UDP rules need this TCP/HTTP check.
  healthcheck {
    protocol                 = lower(var.health_check.protocol)
    port                     = var.health_check.port
    path                     = var.health_check.protocol == "TCP" ? null : var.health_check.path
    check_interval_seconds   = var.settings.health_check_interval
    response_timeout_seconds = var.settings.health_check_timeout
    unhealthy_threshold      = var.settings.health_check_unhealthy
    healthy_threshold        = var.settings.health_check_healthy
  }

  # loadBalancerSourceRanges are enforced by the load balancer's firewall.
  dynamic "firewall" {
    for_each = length(var.service.source_ranges) > 0 ? [var.service.source_ranges] : []
    content {
      allow = [for r in firewall.value : "cidr:${r}"]
    }
  }

  lifecycle {
    precondition {
      condition     = length(local.unsupported_ports) == 0
      error_message = "spec.ports: DigitalOcean load balancers forward TCP and UDP only; unsupported: ${join(", ", local.unsupported_ports)}."
    }
    precondition {
      condition     = var.service.session_affinity != "ClientIP"
      error_message = "spec.sessionAffinity: ClientIP is not possible with DigitalOcean load balancers (sticky sessions are cookie based, for HTTP only)."
    }
    precondition {
      condition     = var.service.load_balancer_ip == null
      error_message = "spec.loadBalancerIP: DigitalOcean assigns load balancer addresses itself; a requested IP is not possible."
    }
    precondition {
      condition     = var.service.shared_ip == null
      error_message = "tfccm.io/allow-shared-ip: every DigitalOcean load balancer has an address of its own, and Services cannot share it; put the ports on one Service."
    }
    precondition {
      condition     = !(local.internal && local.ipv6)
      error_message = "spec.ipFamilies: an internal DigitalOcean load balancer has a private IPv4 VPC address only; IPv6 is not possible."
    }
    precondition {
      condition     = !(length(local.udp_ports) > 0 && var.service.proxy_protocol)
      error_message = "tfccm.io/proxy-protocol: DigitalOcean load balancers send the PROXY header on TCP connections only; not possible with UDP ports (${join(", ", local.udp_ports)})."
    }
    precondition {
      condition     = length(local.foreign_nodes) == 0
      error_message = "Nodes whose providerID is not digitalocean://<droplet id> cannot be DigitalOcean load balancer targets: ${join(", ", local.foreign_nodes)}."
    }
  }
}
