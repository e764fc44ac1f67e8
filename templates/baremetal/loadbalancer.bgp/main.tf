# Active-active load balancers on your own Linux hosts, announced over BGP
# (variant "bgp"): on EVERY host of settings.hosts an HAProxy frontend on the
# Service's VIP and an announcement of the VIP (lbhost_bgp_announcement): the
# host's announcer (lbhost-router -announce) keeps the VIP local, and routed
# (a kernel route bgpd announces) while the frontend listens and a node passes the health check, and the
# host's FRR (lbhost_bgp_speaker, the peering: ../bgp/, applied once per
# cluster) announces it to the routers, which spread the flows over every
# healthy host (ECMP). No VRRP. The VIP is allocated once, across every host
# that answers, and kept in this workspace's state (lbhost_vip_allocation,
# as the default variant's: its VRRP id is reserved on "lo", where no
# keepalived instance runs). Destroying the Service withdraws the VIP on
# every host before its frontends go.
#
# One provider configuration is one host, so the hosts are one provider
# block with for_each (OpenTofu >= 1.9).
provider "lbhost" {
  alias    = "host"
  for_each = var.settings.hosts

  config_dir          = coalesce(each.value.config_dir, var.settings.config_dir)
  haproxy             = var.settings.haproxy
  keepalived_config   = each.value.keepalived_config != null ? each.value.keepalived_config : var.settings.keepalived_config
  keepalived_pid_file = each.value.keepalived_pid_file != null ? each.value.keepalived_pid_file : var.settings.keepalived_pid_file
  # Every host's own addresses: no VIP takes one, even when the VIP pool
  # covers the hosts' subnet (a host sees only its own, and not a /32).
  reserved_addresses = [for a in flatten([for h in var.settings.hosts : [h.address, h.address6]]) : a if a != null]
  ssh                = local.ssh[each.key]
  # A retired host that does not answer is forgotten on destroy.
  forget_unreachable = each.value.retired
}

# Every active host at once: the VIPs' allocation, and which hosts answer.
provider "lbhost" {
  alias = "hosts"

  reserved_addresses = [for a in flatten([for h in var.settings.hosts : [h.address, h.address6]]) : a if a != null]
  hosts = [for name in local.names : {
    name       = name
    config_dir = coalesce(local.active[name].config_dir, var.settings.config_dir)
    ssh        = local.ssh[name]
  }]
}

locals {
  ssh = { for name, h in var.settings.hosts : name => {
    host             = h.address
    port             = h.ssh_port
    user             = h.user
    host_key         = h.host_key
    known_hosts_file = h.host_key == null ? var.settings.known_hosts_file : null
    # A path (agent socket or key file): the key itself never reaches
    # rendered files, plans or state.
    agent_socket     = var.settings.ssh_agent_socket
    private_key_file = var.settings.ssh_private_key_file
    sudo             = h.sudo != null ? h.sudo : var.settings.sudo
  } }

  # Owner of this LB's fragments, VIP claims and VRRP instances. '_'
  # separates the two names unambiguously: neither may contain it.
  owner = "${var.cluster_name}_${var.load_balancer_id}"

  ipv4 = "^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$"

  # Hosts that serve. A host being retired keeps its provider configuration
  # (retired = true) for one apply, so its objects can be destroyed.
  active = { for name, h in var.settings.hosts : name => h if !h.retired }
  names  = sort(keys(local.active))

  # Every node with an IPv4 InternalIP, at its first one: the backends of
  # both families' frontends (HAProxy proxies an IPv6 client to an IPv4 node).
  backends = [for n in var.nodes : {
    name    = n.name
    address = [for a in n.addresses : a.address if a.type == "InternalIP" && can(regex(local.ipv4, a.address))][0]
  } if length([for a in n.addresses : a if a.type == "InternalIP" && can(regex(local.ipv4, a.address))]) > 0]

  # One VIP (with its own VRRP instance and virtual router id) and one
  # frontend per host and IP family served: the Service's families that
  # have a pool (IPv6 needs settings.vip_pool6). The IPv4 ones keep the
  # names and keys they had before IPv6; the IPv6 ones are owned by
  # "<owner>.6" (share token "<token>-6") and keyed "<host>.6".
  requested = { for a in var.service.load_balancer_ips : (strcontains(a, ":") ? "IPv6" : "IPv4") => a }
  pools     = { IPv4 = var.settings.vip_pool, IPv6 = var.settings.vip_pool6 }
  served    = [for f in var.service.ip_families : f if local.pools[f] != null]
  vips = { for f in local.served : f => {
    owner     = f == "IPv4" ? local.owner : "${local.owner}.6"
    pool      = local.pools[f]
    requested = lookup(local.requested, f, null)
    share     = var.service.shared_ip == null || f == "IPv4" ? var.service.shared_ip : "${var.service.shared_ip}-6"
    suffix    = f == "IPv4" ? "" : ".6"
  } }
  # Per (host, family) of every active host.
  active_vips = merge([for f, v in local.vips : { for name in local.names : "${name}${v.suffix}" => { host = name, family = f } }]...)
}

# Which hosts answer: read at every plan; none fails it (no LB host is
# reachable), one or more down lets the others go on.
data "lbhost_hosts" "all" {
  provider = lbhost.hosts
}

# The VIP and virtual router id of each family, decided across the hosts
# that answer and kept in state. An owner that holds them already (the
# layout where the first host allocated) keeps them.
resource "lbhost_vip_allocation" "vip" {
  for_each = local.vips
  provider = lbhost.hosts

  owner   = each.value.owner
  pool    = each.value.pool
  address = each.value.requested
  share   = each.value.share
  # No VRRP: the id is reserved on "lo", where no instance runs.
  vrrp_interface          = "lo"
  virtual_router_id_range = var.settings.virtual_router_ids

  lifecycle {
    # The provider checks this too; here the message names the Service's field.
    precondition {
      condition     = each.value.requested == null || cidrhost("${coalesce(each.value.requested, "::")}/${split("/", each.value.pool)[1]}", 0) == cidrhost(each.value.pool, 0)
      error_message = "The requested load balancer IP ${coalesce(each.value.requested, "-")} is outside the VIP pool ${each.value.pool} (settings.${each.key == "IPv4" ? "vip_pool" : "vip_pool6"})."
    }
  }
}

# An HAProxy frontend on every host and family, bound to the VIP whether or
# not the host announces it (the hosts set net.ipv4.ip_nonlocal_bind and
# net.ipv6.ip_nonlocal_bind = 1).
resource "lbhost_frontend" "lb" {
  for_each = local.active_vips
  provider = lbhost.host[each.value.host]

  name     = local.vips[each.value.family].owner
  address  = lbhost_vip_allocation.vip[each.value.family].address
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

# The VIP announced by every host while its frontend serves it. It depends
# on the frontend: created after it, destroyed before it (the destroy waits
# until the host has withdrawn the VIP and the routers converged).
resource "lbhost_bgp_announcement" "host" {
  for_each = local.active_vips
  provider = lbhost.host[each.value.host]

  owner    = local.vips[each.value.family].owner
  address  = lbhost_frontend.lb[each.key].address
  ports    = [for p in lbhost_frontend.lb[each.key].ports : p.port]
  backends = [for b in local.backends : b.address]
  health_check = {
    protocol    = var.health_check.protocol
    port        = var.health_check.port
    path        = var.health_check.protocol == "TCP" ? null : var.health_check.path
    interval_ms = 500
    rise        = 2
    fall        = 2
  }
}
