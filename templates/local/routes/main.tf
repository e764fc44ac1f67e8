locals {
  ipv4 = "^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$"
  ipv6 = "^[0-9a-fA-F]*:[0-9a-fA-F:.]*$"

  routes = { for name, r in var.routes : name => {
    family = strcontains(r.destination_cidr, ":") ? "6" : "4"
    # The target node's first InternalIP of the destination's family.
    via = r.blackhole ? "" : try([for a in r.target_node_addresses : a.address
      if a.type == "InternalIP" && can(regex(strcontains(r.destination_cidr, ":") ? local.ipv6 : local.ipv4, a.address))
    ][0], null)
  } }
}

# One kernel route per Kubernetes route, in the cloud netns: adding or
# removing one route never touches another.
resource "terraform_data" "route" {
  for_each = var.routes

  triggers_replace = {
    CLOUD_NETNS = var.settings.cloud_netns
    CIDR        = each.value.destination_cidr
    FAMILY      = local.routes[each.key].family
    VIA         = coalesce(local.routes[each.key].via, "-")
    BLACKHOLE   = each.value.blackhole ? "true" : "false"
  }
  input = {
    destination_cidr = each.value.destination_cidr
    target_node      = each.value.target_node
    blackhole        = each.value.blackhole
  }

  lifecycle {
    # A changed route is replaced in place by `ip route replace`; the old
    # resource's destroy then deletes only its own (now absent) next hop.
    create_before_destroy = true

    precondition {
      condition     = local.routes[each.key].via != null
      error_message = "Route ${each.key}: node ${each.value.target_node} has no InternalIP of the IPv${local.routes[each.key].family} family of ${each.value.destination_cidr}."
    }
  }

  provisioner "local-exec" {
    command     = "bash \"${path.module}/route.sh\" add"
    environment = self.triggers_replace
  }

  provisioner "local-exec" {
    when        = destroy
    command     = "bash \"${path.module}/route.sh\" del"
    environment = self.triggers_replace
  }
}
