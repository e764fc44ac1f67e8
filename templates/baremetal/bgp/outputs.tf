output "speakers" {
  description = "Per active LB host, the hash of its FRR configuration (passwords masked)."
  value       = { for name, s in lbhost_bgp_speaker.host : name => s.config_hash }
}

output "router_neighbors" {
  description = "The router side of the peering, from the same settings: per peer (by name; the routers of settings.bgp.routers too), the router's address and the neighbors it must configure (the active LB hosts that peer with it: their IPv4 addresses for an IPv4 peer, their address6 for an IPv6 one), their AS, timers, BFD profile, the path of the router's copy of the password (router_password_file; never the password) and the prefixes to accept (host routes inside them). A router template (docs/bgp.md) configures its neighbors from it, so a new LB host is one change to settings.hosts."
  value = { for p in local.peers : p.name => {
    address        = p.address
    remote_asn     = var.settings.bgp.asn
    keepalive_time = p.keepalive_time
    hold_time      = p.hold_time
    password_file  = p.router_password_file
    prefixes       = local.prefixes
    bfd_profile    = p.bfd_profile == null ? null : one([for b in var.settings.bgp.bfd_profiles : b if b.name == p.bfd_profile])
    neighbors = sort([for name, h in local.active :
      (length(split(":", p.address)) > 1 ? h.address6 : h.address)
      if(p.hosts == null || contains(coalesce(p.hosts, []), name)) && (length(split(":", p.address)) > 1 ? h.address6 != null : true)
    ])
  } }
}

output "routers" {
  description = "Per Linux router of settings.bgp.routers, the hash of tfccm's section of its FRR configuration (passwords masked)."
  value       = { for name, r in lbhost_bgp_router.router : name => r.config_hash }
}
