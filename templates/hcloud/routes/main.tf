# One Hetzner Cloud network route per pod CIDR: destination = the node's
# pod CIDR, gateway = the node's private (InternalIP) address in the network.

locals {
  gateways = {
    for name, r in var.routes : name => try([for a in r.target_node_addresses : a.address if a.type == "InternalIP" && !strcontains(a.address, ":")][0], null)
  }
  missing = [for name, g in local.gateways : var.routes[name].target_node if g == null]
}

resource "hcloud_network_route" "pod" {
  for_each = var.routes

  network_id  = var.settings.network_id
  destination = each.value.destination_cidr
  gateway     = local.gateways[each.key]

  lifecycle {
    precondition {
      condition     = local.gateways[each.key] != null
      error_message = "Node ${each.value.target_node} has no IPv4 InternalIP; a Hetzner Cloud route's gateway is the node's private network address."
    }
  }
}
