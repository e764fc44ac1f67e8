# HA layer-4 load balancers on your own Linux hosts through tfccm's lbhost
# provider over SSH: on EVERY host of settings.hosts a keepalived VRRP
# instance for the Service's VIP and an lbhost_l4_frontend: the host's
# lbhost-router health-checks the nodes and keeps nftables rules that DNAT
# each VIP:port (TCP, UDP; SCTP where the kernel has it) to a healthy node's
# NodePort (numgen per connection, jhash of the client for ClientIP) and SNAT
# it to the VIP, so the nodes' replies come back to whichever host holds the
# VIP (with conntrackd syncing connection state, to the one that took over).
# The VIP (and its VRRP virtual router id) is allocated once, across every
# host that answers, and kept in this workspace's state
# (lbhost_vip_allocation): no host is special. A host that cannot be
# reached gets its changes recorded as pending; the drift check applies
# them when it is back.
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
  # Every host's address: no VIP takes one, even when the VIP pool covers
  # the hosts' subnet (a host sees only its own, and not a /32).
  reserved_addresses = [for h in var.settings.hosts : h.address]
  ssh                = local.ssh[each.key]
  # A retired host that does not answer is forgotten on destroy.
  forget_unreachable = each.value.retired
}

# Every active host at once: the VIP's allocation, and which hosts answer.
provider "lbhost" {
  alias = "hosts"

  reserved_addresses = [for h in var.settings.hosts : h.address]
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

  # Per host: its unicast VRRP peers, every other host in the settings. A
  # retired host stays a peer until it leaves the settings: the VIPs it
  # holds are released with a priority-0 advert its peers still hear, and
  # they take over at once. A host without peers (alone) runs multicast
  # VRRP: keepalived rejects a unicast source without peers.
  peers = { for name in local.names : name => [
    for other in sort(keys(var.settings.hosts)) : var.settings.hosts[other].address if other != name
  ] }
  # Per host: its VRRP priority (the first host highest unless set).
  vrrp = { for name in local.names : name => {
    # High priorities: a backup takes over a VIP released by a stopping
    # master after (256 - priority)/256 s (VRRP's skew time), not 0.6 s.
    # Counted over every host of the settings, a retired one too: retiring
    # a host changes nothing on the others (no reload of theirs racing the
    # priority-0 advert they take its VIPs over on).
    priority = coalesce(local.active[name].priority, max(250 - 10 * index(sort(keys(var.settings.hosts)), name), 1))
    source   = length(local.peers[name]) > 0 ? local.active[name].address : null
    peers    = local.peers[name]
  } }

  # Every node with an IPv4 InternalIP, at its first one.
  backends = [for n in var.nodes : {
    name    = n.name
    address = [for a in n.addresses : a.address if a.type == "InternalIP" && can(regex(local.ipv4, a.address))][0]
  } if length([for a in n.addresses : a if a.type == "InternalIP" && can(regex(local.ipv4, a.address))]) > 0]

  requested = var.service.load_balancer_ip
  # The VIP's segment (its address pool's network block,
  # docs/address-pools.md#segments): subnet, interface and hosts replace
  # settings.vip_pool, vrrp_interface and every host.
  segment    = lookup(var.service.segments, coalesce(local.requested, "-"), null)
  pool       = coalesce(try(local.segment.subnet, null), var.settings.vip_pool)
  pool_from  = try(local.segment.subnet, null) != null ? "network.subnet of address pool ${local.segment.pool}" : "settings.vip_pool"
  interface  = coalesce(try(local.segment.interface, null), var.settings.vrrp_interface)
  named      = try(local.segment.hosts, [])
  serving    = { for name, h in local.active : name => h if length(local.named) == 0 || contains(local.named, name) }
  segment_is = local.segment == null ? "the default segment" : "address pool ${local.segment.pool}'s network (interface ${local.interface}, subnet ${local.pool}, hosts ${length(local.named) > 0 ? join(", ", local.named) : "all"})"
  # A VIP's VRRP peers are its segment's other hosts.
  vip_peers = { for name in keys(local.serving) : name => [
    for p in local.vrrp[name].peers : p if length(local.named) == 0 || contains([for h in local.named : try(var.settings.hosts[h].address, null)], p)
  ] }
  pool_bits = split("/", local.pool)[1]
}

# Which hosts answer: read at every plan; none fails it (no LB host is
# reachable), one or more down lets the others go on.
data "lbhost_hosts" "all" {
  provider = lbhost.hosts
}

# The VIP and virtual router id, decided across the hosts that answer and
# kept in state. An owner that holds them already (the layout where the
# first host allocated) keeps them.
resource "lbhost_vip_allocation" "vip" {
  provider = lbhost.hosts

  owner                   = local.owner
  pool                    = local.pool
  address                 = local.requested
  share                   = var.service.shared_ip
  vrrp_interface          = var.settings.vrrp_interface
  virtual_router_id_range = var.settings.virtual_router_ids

  lifecycle {
    # The provider checks this too; here the message names the Service's field.
    precondition {
      condition     = local.requested == null || cidrhost("${coalesce(local.requested, "0.0.0.0")}/${local.pool_bits}", 0) == cidrhost(local.pool, 0)
      error_message = "The load balancer IP ${coalesce(local.requested, "-")} is outside the VIP pool ${local.pool} (${local.pool_from}) of ${local.segment_is}."
    }
    precondition {
      condition     = alltrue([for h in local.named : contains(local.names, h)])
      error_message = "The load balancer IP ${coalesce(local.requested, "-")} is on ${local.segment_is}, which names LB hosts that are not active in settings.hosts: ${join(", ", [for h in local.named : h if !contains(local.names, h)])}."
    }
  }
}

# Upgrading from the layout where the first host by name allocated: its
# VIP is forgotten here (not destroyed) and adopted by lbhost_vip.host with
# the same address and id; the other hosts' keep their state.
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
# the layer-4 frontends, not they on it: a VIP goes up once its rules are
# loaded, and a host's VIPs go (a priority-0 advert: a peer takes over at
# once) before its rules do.
resource "lbhost_vip" "host" {
  for_each = local.serving
  provider = lbhost.host[each.key]

  depends_on = [lbhost_l4_frontend.lb]

  owner     = local.owner
  pool      = local.pool
  address   = lbhost_vip_allocation.vip.address
  share     = var.service.shared_ip
  interface = local.interface
  vrrp = {
    # Adverts stay on settings.vrrp_interface; the VIP is on its segment's.
    interface         = var.settings.vrrp_interface
    virtual_router_id = lbhost_vip_allocation.vip.virtual_router_id
    priority          = local.vrrp[each.key].priority
    advert_int        = var.settings.advert_int
    nopreempt         = true
    source_address    = length(local.vip_peers[each.key]) > 0 ? local.vrrp[each.key].source : null
    peers             = local.vip_peers[each.key]
  }
}

# The layer-4 load balancer on every host (a backup keeps the same rules
# for the VIP it does not hold, ready for a failover).
resource "lbhost_l4_frontend" "lb" {
  for_each = local.serving
  provider = lbhost.host[each.key]

  name     = local.owner
  address  = lbhost_vip_allocation.vip.address
  ports    = [for p in var.service.ports : { protocol = p.protocol, port = p.port, node_port = p.node_port }]
  backends = local.backends

  # kube-proxy's health endpoint, or for externalTrafficPolicy: Local the
  # Service's healthCheckNodePort: a node failing it twice gets no new
  # connections.
  health_check = {
    protocol    = var.health_check.protocol
    port        = var.health_check.port
    path        = var.health_check.protocol == "TCP" ? null : var.health_check.path
    interval_ms = 1000
    rise        = 2
    fall        = 2
  }

  source_ranges    = length(var.service.source_ranges) > 0 ? var.service.source_ranges : null
  session_affinity = coalesce(var.service.session_affinity, "None")
  # The nodes' replies must come back through the host holding the VIP.
  snat = true
}
