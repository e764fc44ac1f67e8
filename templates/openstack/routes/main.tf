# One extra route of the cluster's Neutron router per pod CIDR: destination =
# the node's pod CIDR, next hop = the node's InternalIP of the same family
# (cloud-provider-openstack's routes). The nodes' ports also need the pod
# CIDRs in their allowed address pairs (port security) for the packets to
# pass; that belongs to the infrastructure that created the ports.

locals {
  next_hops = {
    for name, r in var.routes : name => try([
      for a in r.target_node_addresses : a.address
      if a.type == "InternalIP" && strcontains(a.address, ":") == strcontains(r.destination_cidr, ":")
    ][0], null)
  }
}

resource "openstack_networking_router_route_v2" "pod" {
  for_each = var.routes

  router_id        = var.settings.router_id
  destination_cidr = each.value.destination_cidr
  next_hop         = local.next_hops[each.key]

  lifecycle {
    precondition {
      condition     = local.next_hops[each.key] != null
      error_message = "Node ${each.value.target_node} has no ${strcontains(each.value.destination_cidr, ":") ? "IPv6" : "IPv4"} InternalIP; the route to ${each.value.destination_cidr} needs one as its next hop."
    }
  }
}
