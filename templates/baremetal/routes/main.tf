# Kernel routes on a Linux router host over SSH through tfccm's lbhost
# provider: a retargeted route is an in-place update, a route removed behind
# tfccm's back is recreated by the next apply. The nodes set borrows this
# module (templates/builtin.go): node mode's load balancers need no SSH, only
# these routes do.
provider "lbhost" {
  ssh = {
    host             = var.settings.router.address
    port             = var.settings.router.ssh_port
    user             = var.settings.router.user
    host_key         = var.settings.router.host_key
    known_hosts_file = var.settings.router.host_key == null ? var.settings.known_hosts_file : null
    # A path (agent socket or key file): the key itself never reaches
    # rendered files, plans or state.
    agent_socket     = var.settings.ssh_agent_socket
    private_key_file = var.settings.ssh_private_key_file
    sudo             = var.settings.router.sudo
  }
}

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

# One kernel route per Kubernetes route: adding or removing one route never
# touches another.
resource "lbhost_route" "route" {
  for_each = var.routes

  destination = each.value.destination_cidr
  gateway     = each.value.blackhole ? null : local.routes[each.key].via
  blackhole   = each.value.blackhole

  lifecycle {
    precondition {
      condition     = local.routes[each.key].via != null
      error_message = "Route ${each.key}: node ${each.value.target_node} has no InternalIP of the IPv${local.routes[each.key].family} family of ${each.value.destination_cidr}."
    }
  }
}
