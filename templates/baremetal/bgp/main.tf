# The LB hosts' BGP peering, once per cluster: on every active host of
# settings.hosts an lbhost_bgp_speaker (FRR's configuration: the host's AS,
# its peers with their timers, password files and BFD profiles, and the
# pools whose /32 and /128 routes it announces, with their communities and
# local preference). The announcements themselves are per Service
# (../loadbalancer.bgp/). Every value is checked at plan by the provider,
# naming the setting (an ASN out of range or equal to a peer's, a peer
# outside every network of the host, an invalid community).
# Every host of the settings, retired ones too: a provider instance must
# outlive its resources by one apply (see ../README.md, retiring a host).
provider "lbhost" {
  alias    = "host"
  for_each = var.settings.hosts

  config_dir    = coalesce(each.value.config_dir, var.settings.config_dir)
  frr_config    = each.value.frr_config
  frr_pathspace = each.value.frr_pathspace
  # A retired host that does not answer is forgotten on destroy.
  forget_unreachable = each.value.retired
  ssh = {
    host             = each.value.address
    port             = each.value.ssh_port
    user             = each.value.user
    host_key         = each.value.host_key
    known_hosts_file = each.value.host_key == null ? var.settings.known_hosts_file : null
    agent_socket     = var.settings.ssh_agent_socket
    private_key_file = var.settings.ssh_private_key_file
    sudo             = each.value.sudo != null ? each.value.sudo : var.settings.sudo
  }
}

# One per Linux router of settings.bgp.routers, retired ones too (a
# provider instance must outlive its resources by one apply): the router
# side of the peering (lbhost_bgp_router), over SSH as to an LB host.
provider "lbhost" {
  alias    = "router"
  for_each = { for r in var.settings.bgp.routers : r.name => r }

  frr_config    = each.value.frr_config
  frr_pathspace = each.value.frr_pathspace
  ssh = {
    host             = each.value.address
    port             = each.value.ssh_port
    user             = each.value.user
    host_key         = each.value.host_key
    known_hosts_file = each.value.host_key == null ? var.settings.known_hosts_file : null
    agent_socket     = var.settings.ssh_agent_socket
    private_key_file = var.settings.ssh_private_key_file
    sudo             = each.value.sudo != null ? each.value.sudo : var.settings.sudo
  }
}

locals {
  active = { for name, h in var.settings.hosts : name => h if !h.retired }
  # The hosts' peers: settings.bgp.peers, and every router of
  # settings.bgp.routers (NAME on its address, NAME-6 on its address6).
  routers = [for r in var.settings.bgp.routers : r if !r.retired]
  peers = concat([for p in var.settings.bgp.peers : {
    name                 = p.name
    address              = p.address
    asn                  = p.asn
    port                 = p.port
    keepalive_time       = p.keepalive_time
    hold_time            = p.hold_time
    password_file        = p.password_file
    router_password_file = p.router_password_file
    bfd_profile          = p.bfd_profile
    ibgp                 = p.ibgp
    hosts                = p.hosts
    }], flatten([for r in local.routers : [for a in compact([r.address, r.address6]) : {
      name                 = a == r.address ? r.name : "${r.name}-6"
      address              = a
      asn                  = r.asn
      port                 = tonumber(null)
      keepalive_time       = r.keepalive_time
      hold_time            = r.hold_time
      password_file        = r.password_file
      router_password_file = r.router_password_file
      bfd_profile          = r.bfd_profile
      ibgp                 = false
      hosts                = r.hosts
  }]]))
  # Per peer and active host: the host's address the peer sees (its
  # peer_addresses for the peer, else address or address6 by the peer's
  # family; null: none of that family).
  peer_host = { for p in local.peers : p.name => { for name, h in local.active :
    name => try(h.peer_addresses[p.name], length(split(":", p.address)) > 1 ? h.address6 : h.address)
  } }
  # The router side of every peer (the router_neighbors output).
  router_neighbors = { for p in local.peers : p.name => {
    address        = p.address
    remote_asn     = var.settings.bgp.asn
    keepalive_time = p.keepalive_time
    hold_time      = p.hold_time
    password_file  = p.router_password_file
    prefixes       = local.prefixes
    bfd_profile    = p.bfd_profile == null ? null : one([for b in var.settings.bgp.bfd_profiles : b if b.name == p.bfd_profile])
    neighbors = sort([for name, h in local.active : local.peer_host[p.name][name]
      if(p.hosts == null || contains(coalesce(p.hosts, []), name)) && local.peer_host[p.name][name] != null
    ])
  } }
  prefixes = distinct(flatten([for p in local.pools : p.prefixes]))
  pools = var.settings.bgp.pools != null ? var.settings.bgp.pools : [{
    name             = "default"
    prefixes         = compact([var.settings.vip_pool, var.settings.vip_pool6])
    communities      = []
    local_preference = null
  }]
}

resource "lbhost_bgp_speaker" "host" {
  for_each = local.active
  provider = lbhost.host[each.key]

  asn       = var.settings.bgp.asn
  router_id = each.value.address
  peers = [for p in local.peers : {
    name           = p.name
    address        = p.address
    asn            = p.asn
    port           = p.port
    keepalive_time = p.keepalive_time
    hold_time      = p.hold_time
    password_file  = p.password_file
    bfd_profile    = p.bfd_profile
    ibgp           = p.ibgp
  } if p.hosts == null || contains(coalesce(p.hosts, []), each.key)]
  bfd_profiles = var.settings.bgp.bfd_profiles
  pools        = local.pools
}

# The router side on every Linux router of settings.bgp.routers: each
# active LB host (of the router's hosts) a neighbour, on the router's
# address and, with address6, on the hosts' address6 (or their
# peer_addresses for the router); only host routes inside the pools
# accepted.
resource "lbhost_bgp_router" "router" {
  for_each = { for r in var.settings.bgp.routers : r.name => r if !r.retired }
  provider = lbhost.router[each.key]

  asn = each.value.asn
  neighbors = flatten([for name, h in local.active : [for peer in compact([each.key, each.value.address6 == null ? null : "${each.key}-6"]) : {
    name           = peer == each.key ? name : "${name}-6"
    address        = local.peer_host[peer][name]
    asn            = var.settings.bgp.asn
    keepalive_time = each.value.keepalive_time
    hold_time      = each.value.hold_time
    password_file  = each.value.router_password_file
    bfd_profile    = each.value.bfd_profile
  } if local.peer_host[peer][name] != null] if each.value.hosts == null || contains(coalesce(each.value.hosts, []), name)])
  bfd_profiles  = [for b in var.settings.bgp.bfd_profiles : b if b.name == each.value.bfd_profile]
  prefixes      = local.prefixes
  maximum_paths = each.value.maximum_paths
}
