variable "settings" {
  description = "The cloud config's load_balancer.settings (the LB hosts and the SSH key source, as the loadbalancer variants read them) with its bgp block: the hosts' peering."
  type = object({
    hosts = map(object({
      address = string # IPv4: SSH, and the host's BGP router id
      # IPv6: the host's address an IPv6 peer (the router) sees; only
      # the router_neighbors output reads it.
      address6 = optional(string)
      ssh_port = optional(number, 22)
      user     = optional(string, "root")
      sudo     = optional(bool)
      host_key = optional(string)
      retired  = optional(bool, false)
      # Where the host's FRR is (defaults: /etc/frr/frr.conf, no pathspace).
      frr_config    = optional(string)
      frr_pathspace = optional(string)
      config_dir    = optional(string)
      # The host's own address on a peer's link, by peer name (a router's
      # NAME and NAME-6 too): a host cabled to a routed port of each
      # router, its end of the port's /31 or /64. Default address for an
      # IPv4 peer, address6 for an IPv6 one. The router side reads it
      # (router_neighbors, settings.bgp.routers); the host's FRR peers
      # from whichever of its addresses is on the peer's network.
      peer_addresses = optional(map(string), {})
    }))
    vip_pool             = string
    vip_pool6            = optional(string)
    config_dir           = optional(string, "/etc/tfccm/lbhost")
    known_hosts_file     = optional(string)
    ssh_agent_socket     = optional(string)
    ssh_private_key_file = optional(string)
    sudo                 = optional(bool, false)
    bgp = object({
      asn = number # the LB hosts' AS
      peers = optional(list(object({
        name           = string
        address        = string
        asn            = number
        port           = optional(number)
        keepalive_time = optional(number)
        hold_time      = optional(number)
        # A path on the CCM's machine (a mounted Secret): the password itself is never a setting.
        password_file = optional(string)
        # Declared only to refuse it with a clear message (it would reach plans and state).
        password    = optional(string)
        bfd_profile = optional(string)
        ibgp        = optional(bool, false)
        # Per-host peers (hosts in different racks): the hosts that peer with it; default every host.
        hosts = optional(list(string))
        # The path of the router's own copy of the password, for a router
        # template (router_neighbors' password_file).
        router_password_file = optional(string)
      })), [])
      # Linux routers running FRR that tfccm configures too (lbhost_bgp_router
      # over SSH, as LB hosts): each is a peer of the hosts (a second one,
      # NAME-6, on address6) and gets the hosts as tfccm-* neighbours inside
      # the admin's own `router bgp <asn>`. A new LB host is one change.
      routers = optional(list(object({
        name     = string
        address  = string # IPv4: SSH, and the hosts' IPv4 peer
        address6 = optional(string)
        asn      = number
        ssh_port = optional(number, 22)
        user     = optional(string, "root")
        sudo     = optional(bool)
        host_key = optional(string)
        # The router's FRR (defaults: /etc/frr/frr.conf, no pathspace).
        frr_config     = optional(string)
        frr_pathspace  = optional(string)
        keepalive_time = optional(number)
        hold_time      = optional(number)
        # The hosts' copy of the password (a path on the CCM's machine, a
        # mounted Secret) and the router's own (a path on the router).
        password_file        = optional(string)
        router_password_file = optional(string)
        # Declared only to refuse it with a clear message.
        password      = optional(string)
        bfd_profile   = optional(string)
        maximum_paths = optional(number)
        # The hosts that peer with it (racks); default every host.
        hosts = optional(list(string))
        # true: tfccm removes its objects from the router (and the hosts'
        # sessions with it); drop the router after the next apply.
        retired = optional(bool, false)
      })), [])
      bfd_profiles = optional(list(object({
        name                 = string
        receive_interval_ms  = optional(number)
        transmit_interval_ms = optional(number)
        detect_multiplier    = optional(number)
      })), [])
      # The pools announced, with their communities and local preference;
      # default one pool "default" of vip_pool (and vip_pool6).
      pools = optional(list(object({
        name             = string
        prefixes         = list(string)
        communities      = optional(list(string), [])
        local_preference = optional(number)
      })))
    })
  })

  validation {
    condition     = alltrue([for p in var.settings.bgp.peers : p.password == null])
    error_message = "settings.bgp.peers[*].password: a BGP password is never a setting (it would reach the rendered inputs, plans and state); put it in a Secret mounted as a file and set password_file to its path."
  }
  validation {
    condition     = alltrue([for r in var.settings.bgp.routers : r.password == null])
    error_message = "settings.bgp.routers[*].password: a BGP password is never a setting (it would reach the rendered inputs, plans and state); set password_file (the hosts' copy, a mounted Secret) and router_password_file (the router's copy, a path on the router)."
  }
  validation {
    condition     = alltrue([for r in var.settings.bgp.routers : (r.password_file == null) == (r.router_password_file == null)])
    error_message = "settings.bgp.routers[*]: set both password_file (the hosts' copy) and router_password_file (the router's), or neither: a session with a password on one side only never comes up."
  }
  validation {
    condition     = alltrue([for r in var.settings.bgp.routers : r.asn != var.settings.bgp.asn])
    error_message = "settings.bgp.routers[*].asn: a router's AS must differ from settings.bgp.asn, the LB hosts' (the hosts are its eBGP neighbours)."
  }
  validation {
    condition     = length(distinct(concat([for r in var.settings.bgp.routers : r.name], [for r in var.settings.bgp.routers : "${r.name}-6" if r.address6 != null], [for p in var.settings.bgp.peers : p.name]))) == length(var.settings.bgp.routers) + length([for r in var.settings.bgp.routers : r if r.address6 != null]) + length(var.settings.bgp.peers)
    error_message = "settings.bgp.routers[*].name: every router's name (and NAME-6 for one with address6) must differ from the others' and from every settings.bgp.peers[*].name."
  }
  validation {
    condition     = alltrue([for r in var.settings.bgp.routers : r.hosts == null || alltrue([for h in coalesce(r.hosts, []) : contains(keys(var.settings.hosts), h)])])
    error_message = "settings.bgp.routers[*].hosts: every name must be one of settings.hosts."
  }
  validation {
    condition = alltrue(flatten([for h in values(var.settings.hosts) : [for peer, a in h.peer_addresses :
      contains(concat([for p in var.settings.bgp.peers : p.name], [for r in var.settings.bgp.routers : r.name], [for r in var.settings.bgp.routers : "${r.name}-6" if r.address6 != null]), peer)
    ]]))
    error_message = "settings.hosts[*].peer_addresses: every key must name a peer of settings.bgp.peers or a router of settings.bgp.routers (NAME, or NAME-6 for its address6)."
  }
  validation {
    condition = alltrue(flatten([for h in values(var.settings.hosts) : [for peer, a in h.peer_addresses :
      # An IPv6 address has a colon (an IPv4 one as a /128 is no prefix;
      # an IPv6 one as a /32 is).
      anytrue(concat([for p in var.settings.bgp.peers : p.name == peer && (length(split(":", p.address)) > 1 ? can(cidrhost("${a}/128", 0)) : length(split(":", a)) == 1 && can(cidrhost("${a}/32", 0)))],
        [for r in var.settings.bgp.routers : r.name == peer && length(split(":", a)) == 1 && can(cidrhost("${a}/32", 0))],
      [for r in var.settings.bgp.routers : "${r.name}-6" == peer && can(cidrhost("${a}/128", 0))]))
    ]]))
    error_message = "settings.hosts[*].peer_addresses: every value must be an address of its peer's family (IPv4 for an IPv4 peer and a router's NAME, IPv6 for an IPv6 peer and NAME-6)."
  }
  validation {
    condition     = (var.settings.ssh_agent_socket == null) != (var.settings.ssh_private_key_file == null)
    error_message = "Set exactly one of settings.ssh_agent_socket and settings.ssh_private_key_file (a path: the key itself is never a setting)."
  }
  validation {
    condition     = alltrue([for p in var.settings.bgp.peers : p.hosts == null || alltrue([for h in coalesce(p.hosts, []) : contains(keys(var.settings.hosts), h)])])
    error_message = "settings.bgp.peers[*].hosts: every name must be one of settings.hosts."
  }
}
