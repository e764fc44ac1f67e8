# HA load balancers on your own Linux hosts through tfccm's lbhost provider
# over SSH: on EVERY host of settings.hosts a keepalived VRRP instance for the
# Service's VIP and an HAProxy frontend on it. The VIP (and its VRRP virtual
# router id) is allocated once, across every host that answers, and kept in
# this workspace's state (lbhost_vip_allocation): no host is special, any one
# may be down, reinstalled or replaced. A host that cannot be reached gets
# its changes recorded as pending; the drift check applies them when it is
# back.
#
# One provider configuration is one host, so the hosts are one provider
# block with for_each (OpenTofu >= 1.9; see README.md for why and what that
# means for adding and retiring hosts).
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
    # Where an adoption (adopt.tf) reads the host's hand-made instance.
    keepalived_config = local.active[name].keepalived_config != null ? local.active[name].keepalived_config : var.settings.keepalived_config
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

  # Per host: its unicast VRRP peers, every other host in the settings. A
  # retired host stays a peer until it leaves the settings: the VIPs it
  # holds are released with a priority-0 advert its peers still hear, and
  # they take over at once. A host without peers (alone) runs multicast
  # VRRP: keepalived rejects a unicast source without peers.
  peers = { for name in local.names : name => [
    for other in sort(keys(var.settings.hosts)) : var.settings.hosts[other].address if other != name
  ] }
  # An IPv6 VIP's instance is an IPv6 one (keepalived takes the family from
  # the VIP; IPv6 means VRRPv3): unicast between the hosts' address6 when
  # every host has one, else multicast to ff02::12 on vrrp_interface.
  unicast6 = alltrue([for h in var.settings.hosts : h.address6 != null])
  peers6 = { for name in local.names : name => local.unicast6 ? [
    for other in sort(keys(var.settings.hosts)) : var.settings.hosts[other].address6 if other != name
  ] : [] }
  # Per host and family: its VRRP priority (the first host highest unless
  # set), unicast source and peers.
  vrrp = { for name in local.names : name => {
    # High priorities: a backup takes over a VIP released by a stopping
    # master after (256 - priority)/256 s (VRRP's skew time), not 0.6 s.
    # Counted over every host of the settings, a retired one too: retiring
    # a host changes nothing on the others (no reload of theirs racing the
    # priority-0 advert they take its VIPs over on).
    priority = coalesce(local.active[name].priority, max(250 - 10 * index(sort(keys(var.settings.hosts)), name), 1))
    IPv4 = {
      source = length(local.peers[name]) > 0 ? local.active[name].address : null
      peers  = local.peers[name]
    }
    IPv6 = {
      source = length(local.peers6[name]) > 0 ? local.active[name].address6 : null
      peers  = local.peers6[name]
    }
  } }

  # Every node with an IPv4 InternalIP, at its first one: the backends of
  # both families' frontends (HAProxy proxies an IPv6 client to an IPv4 node).
  backends = [for n in var.nodes : {
    name    = n.name
    address = [for a in n.addresses : a.address if a.type == "InternalIP" && can(regex(local.ipv4, a.address))][0]
  } if length([for a in n.addresses : a if a.type == "InternalIP" && can(regex(local.ipv4, a.address))]) > 0]

  # One VIP (with its own VRRP instance and virtual router id) and one
  # frontend per host and IP family served: the Service's families that
  # have a pool (IPv6 needs settings.vip_pool6, or a segment's subnet6).
  # The IPv4 ones keep the names and keys they had before IPv6; the IPv6
  # ones are owned by "<owner>.6" (share token "<token>-6") and keyed
  # "<host>.6".
  requested = { for a in var.service.load_balancer_ips : (strcontains(a, ":") ? "IPv6" : "IPv4") => a }
  # The segment of each family's address (its address pool's network
  # block, docs/address-pools.md#segments): its subnet, interface and
  # hosts replace settings.vip_pool(6), vrrp_interface and every host.
  segment = { for a, s in var.service.segments : (strcontains(a, ":") ? "IPv6" : "IPv4") => s }
  pools   = { IPv4 = var.settings.vip_pool, IPv6 = var.settings.vip_pool6 }
  served  = [for f in var.service.ip_families : f if try(coalesce(try(local.segment[f].subnet, null), local.pools[f]), null) != null]
  vips = { for f in local.served : f => {
    owner     = f == "IPv4" ? local.owner : "${local.owner}.6"
    pool      = coalesce(try(local.segment[f].subnet, null), local.pools[f])
    pool_from = try(local.segment[f].subnet, null) != null ? "network.subnet${f == "IPv4" ? "" : "6"} of address pool ${local.segment[f].pool}" : "settings.${f == "IPv4" ? "vip_pool" : "vip_pool6"}"
    interface = coalesce(try(local.segment[f].interface, null), var.settings.vrrp_interface)
    # The hosts of the segment (named ones that are not active are the
    # precondition's), every active host without one.
    named     = try(local.segment[f].hosts, [])
    hosts     = [for n in local.names : n if length(try(local.segment[f].hosts, [])) == 0 || contains(try(local.segment[f].hosts, []), n)]
    segment   = try("address pool ${local.segment[f].pool}'s network (interface ${coalesce(local.segment[f].interface, var.settings.vrrp_interface)}, subnet ${coalesce(local.segment[f].subnet, local.pools[f], "-")}, hosts ${length(local.segment[f].hosts) > 0 ? join(", ", local.segment[f].hosts) : "all"})", "the default segment")
    requested = lookup(local.requested, f, null)
    share     = var.service.shared_ip == null || f == "IPv4" ? var.service.shared_ip : "${var.service.shared_ip}-6"
    suffix    = f == "IPv4" ? "" : ".6"
  } }
  # Per (host, family) of every active host of the family's segment.
  active_vips = merge([for f, v in local.vips : { for name in v.hosts : "${name}${v.suffix}" => { host = name, family = f } }]...)
  # A VIP's VRRP peers are its segment's other hosts.
  vip_peers = { for k, hv in local.active_vips : k => [
    for p in local.vrrp[hv.host][hv.family].peers : p if length(local.vips[hv.family].named) == 0 || contains([for h in local.vips[hv.family].named : try(hv.family == "IPv4" ? var.settings.hosts[h].address : var.settings.hosts[h].address6, null)], p)
  ] }
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

  owner                   = each.value.owner
  pool                    = each.value.pool
  address                 = each.value.requested
  share                   = each.value.share
  vrrp_interface          = var.settings.vrrp_interface
  virtual_router_id_range = var.settings.virtual_router_ids

  lifecycle {
    # The provider checks this too; here the message names the Service's field.
    precondition {
      condition     = each.value.requested == null || cidrhost("${coalesce(each.value.requested, "::")}/${split("/", each.value.pool)[1]}", 0) == cidrhost(each.value.pool, 0)
      error_message = "The load balancer IP ${coalesce(each.value.requested, "-")} is outside the VIP pool ${each.value.pool} (${each.value.pool_from}) of ${each.value.segment}."
    }
    precondition {
      condition     = alltrue([for h in each.value.named : contains(local.names, h)])
      error_message = "The load balancer IP ${coalesce(each.value.requested, "-")} is on ${each.value.segment}, which names LB hosts that are not active in settings.hosts: ${join(", ", [for h in each.value.named : h if !contains(local.names, h)])}."
    }
  }
}

# Upgrading from the layout where the first host by name allocated: its
# VIPs are forgotten here (not destroyed) and adopted by lbhost_vip.host
# with the same address and id; the other hosts' keep their state.
removed {
  from = lbhost_vip.first
  lifecycle {
    destroy = false
  }
}

moved {
  from = lbhost_vip.other
  to   = lbhost_vip.host
}

# The VIP with its VRRP instance on every host, all alike. It depends on
# the frontends, not they on it: a VIP goes up once its frontends listen,
# and a host's VIPs go (a priority-0 advert: a peer takes over at once)
# before its frontends do. Retiring the master, or deleting a Service,
# never leaves the VIP on a host whose frontend is gone.
resource "lbhost_vip" "host" {
  for_each = local.active_vips
  provider = lbhost.host[each.value.host]

  depends_on = [lbhost_frontend.lb]

  owner     = local.vips[each.value.family].owner
  pool      = local.vips[each.value.family].pool
  address   = lbhost_vip_allocation.vip[each.value.family].address
  share     = local.vips[each.value.family].share
  interface = local.vips[each.value.family].interface
  # Prepared while MetalLB still announces the address: no VRRP instance
  # until the take-over, an in-place update of these VIPs alone.
  standby = !var.service.announce
  vrrp = {
    # Adverts stay on settings.vrrp_interface (unicast between the hosts'
    # addresses); the VIP goes on its segment's interface.
    interface         = var.settings.vrrp_interface
    virtual_router_id = lbhost_vip_allocation.vip[each.value.family].virtual_router_id
    priority          = local.vrrp[each.value.host].priority
    advert_int        = var.settings.advert_int
    nopreempt         = true
    source_address    = length(local.vip_peers[each.key]) > 0 ? local.vrrp[each.value.host][each.value.family].source : null
    peers             = local.vip_peers[each.key]
  }
}

# An HAProxy frontend on every host and family (a backup binds the VIPs it
# does not hold: the hosts set net.ipv4.ip_nonlocal_bind and
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
