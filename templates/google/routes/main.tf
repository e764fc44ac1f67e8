# One Google Cloud route per pod CIDR in the VPC network: destination = the
# node's pod CIDR, next hop = the node's primary internal IPv4 address (its
# InternalIP; the instance needs can_ip_forward). Route names are the
# cluster name and a hash of tfccm's route name (Google names are at most 63
# characters of [a-z0-9-]); the description says which node it serves.

locals {
  next_hops = {
    for name, r in var.routes : name => try([for a in r.target_node_addresses : a.address if a.type == "InternalIP" && !strcontains(a.address, ":")][0], null)
  }
}

resource "google_compute_route" "pod" {
  for_each = var.routes

  project     = var.settings.project
  network     = var.settings.network
  name        = "${substr(var.cluster_name, 0, 30)}-${substr(sha256(each.key), 0, 20)}"
  description = "Pod CIDR of node ${each.value.target_node} (tfccm)"
  dest_range  = each.value.destination_cidr
  next_hop_ip = local.next_hops[each.key]
  priority    = var.settings.priority

  lifecycle {
    precondition {
      condition     = local.next_hops[each.key] != null
      error_message = "Node ${each.value.target_node} has no IPv4 InternalIP; a Google Cloud route's next hop is the node's internal address."
    }
    precondition {
      condition     = can(regex("^[a-z]([-a-z0-9]*[a-z0-9])?$", var.cluster_name))
      error_message = "cluster_name: Google Cloud route names start with the cluster name, which must be lowercase letters, digits and '-', starting with a letter."
    }
  }
}
