# The local cloud's HAProxy (in the cloud netns) through tfccm's lbhost
# provider: the VIP is claimed by the provider at apply time under the
# host's lock, the frontend is read back from HAProxy's config on every
# refresh, so drift is visible and repaired.
provider "lbhost" {
  netns      = var.settings.cloud_netns
  config_dir = var.settings.state_dir
}

locals {
  # Owner of this LB's fragment and VIP claim. '_' separates the two names
  # unambiguously: neither may contain it.
  owner = "${var.cluster_name}_${var.load_balancer_id}"

  ipv4 = "^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$"

  # Every node with an IPv4 InternalIP, at its first one: the backends of
  # both families' frontends (HAProxy proxies an IPv6 client to an IPv4 node).
  backends = [for n in var.nodes : {
    name    = n.name
    address = [for a in n.addresses : a.address if a.type == "InternalIP" && can(regex(local.ipv4, a.address))][0]
  } if length([for a in n.addresses : a if a.type == "InternalIP" && can(regex(local.ipv4, a.address))]) > 0]

  # One VIP and frontend per IP family served: the Service's families that
  # have a pool (IPv6 needs settings.vip_pool6). The IPv4 ones keep the
  # names they had before IPv6; the IPv6 ones are "<owner>.6" (and the
  # share token "<token>-6"), so the two never share a claim or fragment.
  requested = { for a in var.service.load_balancer_ips : (strcontains(a, ":") ? "IPv6" : "IPv4") => a }
  pools     = { IPv4 = var.settings.vip_pool, IPv6 = var.settings.vip_pool6 }
  served    = [for f in var.service.ip_families : f if local.pools[f] != null]
  vips = { for f in local.served : f => {
    owner     = f == "IPv4" ? local.owner : "${local.owner}.6"
    pool      = local.pools[f]
    requested = lookup(local.requested, f, null)
    share     = var.service.shared_ip == null || f == "IPv4" ? var.service.shared_ip : "${var.service.shared_ip}-6"
  } }
}

moved {
  from = lbhost_vip.vip
  to   = lbhost_vip.vip["IPv4"]
}

moved {
  from = lbhost_frontend.lb
  to   = lbhost_frontend.lb["IPv4"]
}

resource "lbhost_vip" "vip" {
  for_each = local.vips

  owner   = each.value.owner
  pool    = each.value.pool
  address = each.value.requested
  share   = each.value.share
  # Prepared while MetalLB still announces the address: claimed, the
  # frontend listening (the cloud netns has ip_nonlocal_bind), the address
  # raised by the take-over, an in-place update of this resource alone.
  standby = !var.service.announce

  lifecycle {
    # The provider checks this too; here the message names the Service's field.
    precondition {
      condition     = each.value.requested == null || cidrhost("${coalesce(each.value.requested, "::")}/${split("/", each.value.pool)[1]}", 0) == cidrhost(each.value.pool, 0)
      error_message = "The requested load balancer IP ${coalesce(each.value.requested, "-")} is outside the local cloud's VIP pool ${each.value.pool}${each.key == "IPv6" ? " (settings.vip_pool6)" : ""}."
    }
  }
}

resource "lbhost_frontend" "lb" {
  for_each = local.vips

  name     = each.value.owner
  address  = lbhost_vip.vip[each.key].address
  ports    = [for p in var.service.ports : { port = p.port, node_port = p.node_port }]
  backends = local.backends

  health_check = {
    protocol = var.health_check.protocol
    port     = var.health_check.port
    path     = var.health_check.protocol == "TCP" ? null : var.health_check.path
    interval = "1s"
    rise     = 2
    fall     = 2
  }

  source_ranges    = length(var.service.source_ranges) > 0 ? var.service.source_ranges : null
  proxy_protocol   = var.service.proxy_protocol ? "v2" : null
  session_affinity = coalesce(var.service.session_affinity, "None")
}
