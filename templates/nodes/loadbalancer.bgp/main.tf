# Node mode over BGP (variant `bgp`, docs/bgp.md): the Service's addresses
# announced by every eligible node of the cluster to the routers of the
# cluster's peering (../bgp/, lbhost_node_bgp), which spread the flows over
# them (ECMP). One lbhost_node_vip with announce = "bgp" per address family;
# tfccm's node agents announce it through each node's own FRR (every
# healthy selected node with externalTrafficPolicy Cluster, those with a
# ready endpoint with Local) and report the announcers; apply returns once
# one node announces. kube-proxy on the holder
# serves the Service (ip_mode VIP): no proxy, no node port, client
# addresses kept with externalTrafficPolicy Local. Prepared during a
# migration from MetalLB (service.announce = false), the NodeVIPs are on
# standby: written, held by no node, apply returns at once; the take-over
# flips them in place.
provider "lbhost" {
  kubernetes = {
    namespace = var.settings.namespace
  }
}

locals {
  # The nodes that may hold the addresses: settings.node_selector's labels
  # (all of them, exact values) on the nodes the Service may use.
  eligible = sort([for n in var.nodes : n.name
  if alltrue([for k, v in var.settings.node_selector : lookup(n.labels, k, null) == v])])

  # One address per family, as tfccm's address pools allocated them.
  addresses = { for a in var.service.load_balancer_ips : (strcontains(a, ":") ? "IPv6" : "IPv4") => a }
  # The Service's primary family first.
  families = [for f in var.service.ip_families : f if contains(keys(local.addresses), f)]
}

resource "lbhost_node_vip" "vip" {
  for_each = local.addresses

  # load_balancer_id is derived from the Service UID: no two Services
  # share a NodeVIP object.
  name                    = "${var.load_balancer_id}-${each.key == "IPv4" ? "4" : "6"}"
  address                 = each.value
  service                 = { namespace = var.service.namespace, name = var.service.name, uid = var.service.uid }
  ports                   = [for p in var.service.ports : { protocol = p.protocol, port = p.port }]
  external_traffic_policy = var.service.external_traffic_policy == "Local" ? "Local" : "Cluster"
  nodes                   = local.eligible
  interface               = var.settings.interface
  wait_timeout            = var.settings.wait_timeout
  standby                 = !var.service.announce
  announce                = "bgp"

  lifecycle {
    # Checked at plan, before anything changes.
    precondition {
      condition     = length(local.eligible) > 0
      error_message = "No node may hold the Service's address: settings.node_selector ${jsonencode(var.settings.node_selector)} matches none of the ${length(var.nodes)} nodes the Service may use."
    }
  }
}
