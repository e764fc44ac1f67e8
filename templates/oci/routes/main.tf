# Pod routes in OCI: one route table for the nodes' subnet holding the
# settings' base rules plus one rule per pod CIDR whose target is the
# node's private IP (the node's VNIC must skip the source/destination check).

locals {
  node_ips = {
    for r in values(var.routes) : r.target_node => try([for a in r.target_node_addresses : a.address if a.type == "InternalIP" && !strcontains(a.address, ":")][0], null)...
  }
  node_ip = { for n, ips in local.node_ips : n => ips[0] }
  missing = [for n, ip in local.node_ip : n if ip == null]
}

# The private IP object (its OCID is the route target) of each node.
data "oci_core_private_ips" "node" {
  for_each = { for n, ip in local.node_ip : n => ip if ip != null }

  ip_address = each.value
  subnet_id  = var.settings.subnet_id
}

resource "oci_core_route_table" "pods" {
  compartment_id = var.settings.compartment_id
  vcn_id         = var.settings.vcn_id
  display_name   = "${var.cluster_name}-pods"
  freeform_tags  = { "tfccm-cluster" = var.cluster_name }

  dynamic "route_rules" {
    for_each = var.settings.base_rules
    content {
      destination       = route_rules.value.destination
      destination_type  = route_rules.value.destination_type
      network_entity_id = route_rules.value.network_entity_id
      description       = route_rules.value.description
    }
  }

  dynamic "route_rules" {
    for_each = var.routes
    content {
      destination       = route_rules.value.destination_cidr
      destination_type  = "CIDR_BLOCK"
      network_entity_id = data.oci_core_private_ips.node[route_rules.value.target_node].private_ips[0].id
      description       = "tfccm ${route_rules.key}"
    }
  }

  lifecycle {
    precondition {
      condition     = length(local.missing) == 0
      error_message = "Nodes without an IPv4 InternalIP cannot be route targets: ${join(", ", local.missing)}."
    }
    precondition {
      condition     = alltrue([for n, d in data.oci_core_private_ips.node : length(d.private_ips) == 1])
      error_message = "No single private IP in settings.subnet_id for node(s) ${join(", ", [for n, d in data.oci_core_private_ips.node : n if length(d.private_ips) != 1])}."
    }
  }
}

resource "oci_core_route_table_attachment" "nodes" {
  subnet_id      = var.settings.subnet_id
  route_table_id = oci_core_route_table.pods.id
}
