# An Exoscale Network Load Balancer for one Service: the NLB and one NLB
# service per Service port, forwarding to the node port of every instance of
# the cluster's instance pool (settings.instance_pool_id) with a health
# check. Exoscale NLB services target an instance pool, never single
# instances, so the pool (not the Node list) decides the backends: nodes
# joining or leaving the pool need no change here, and this module does not
# take the nodes as input. Built the way Exoscale's cloud-controller-manager
# builds them.

locals {
  unsupported_ports = [for p in var.service.ports : "${p.port}/${p.protocol}" if !contains(["TCP", "UDP"], p.protocol)]
}

resource "exoscale_nlb" "this" {
  zone        = var.settings.zone
  name        = var.load_balancer_name
  description = "Kubernetes Service ${var.service.namespace}/${var.service.name} of cluster ${var.cluster_name} (tfccm)"
  labels = merge(var.settings.labels, {
    "tfccm.io/cluster"           = var.cluster_name
    "tfccm.io/service-namespace" = var.service.namespace
    "tfccm.io/service-name"      = var.service.name
  })

  lifecycle {
    precondition {
      condition     = length(local.unsupported_ports) == 0
      error_message = "spec.ports: Exoscale network load balancers forward TCP and UDP only; unsupported: ${join(", ", local.unsupported_ports)}."
    }
    precondition {
      condition     = !var.service.internal
      error_message = "tfccm.io/internal: Exoscale network load balancers have a public address only; internal load balancers are not possible."
    }
    precondition {
      condition     = var.service.load_balancer_ip == null
      error_message = "spec.loadBalancerIP: Exoscale assigns the network load balancer's address itself; a requested IP is not possible."
    }
    precondition {
      condition     = var.service.shared_ip == null
      error_message = "tfccm.io/allow-shared-ip: every Exoscale network load balancer has an address of its own, and Services cannot share it; put the ports on one Service."
    }
    precondition {
      condition     = length(var.service.source_ranges) == 0
      error_message = "spec.loadBalancerSourceRanges: Exoscale network load balancers cannot restrict clients by source address; remove the ranges (filter with the nodes' security group instead)."
    }
    precondition {
      condition     = var.service.ip_families == tolist(["IPv4"])
      error_message = "spec.ipFamilies: Exoscale network load balancers have an IPv4 address only."
    }
    precondition {
      condition     = !var.service.proxy_protocol
      error_message = "tfccm.io/proxy-protocol: Exoscale network load balancers forward packets and cannot send the PROXY protocol (the nodes see the clients' addresses anyway)."
    }
  }
}

resource "exoscale_nlb_service" "port" {
  for_each = { for p in var.service.ports : "${lower(p.protocol)}-${p.port}" => p }

  zone             = var.settings.zone
  nlb_id           = exoscale_nlb.this.id
  name             = "${var.load_balancer_name}-${each.key}"
  description      = "Port ${each.value.port}/${each.value.protocol} of Service ${var.service.namespace}/${var.service.name}"
  instance_pool_id = var.settings.instance_pool_id
  protocol         = lower(each.value.protocol)
  port             = each.value.port
  target_port      = each.value.node_port
  strategy         = var.service.session_affinity == "ClientIP" ? "source-hash" : "round-robin"

  # Nodes are health-checked on kube-proxy's /healthz, or for
  # externalTrafficPolicy: Local on the Service's healthCheckNodePort, which
  # fails on nodes without a ready endpoint.
  healthcheck {
    mode     = lower(var.health_check.protocol)
    port     = var.health_check.port
    uri      = var.health_check.protocol == "TCP" ? null : var.health_check.path
    interval = var.settings.health_check_interval
    timeout  = var.settings.health_check_timeout
    retries  = var.settings.health_check_retries
  }
}
