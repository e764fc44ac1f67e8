output "speakers" {
  description = "Per active LB host, the hash of its FRR configuration (passwords masked)."
  value       = { for name, s in lbhost_bgp_speaker.host : name => s.config_hash }
}

output "router_neighbors" {
  description = "The router side of the peering, from the same settings: per peer (by name), the router's address and the neighbors it must configure (the active LB hosts that peer with it: their IPv4 addresses for an IPv4 peer, their address6 for an IPv6 one), their AS, timers and BFD profile. A router template (docs/bgp.md) configures its neighbors from it, so a new LB host is one change to settings.hosts. No password: the router reads its own copy."
  value = { for p in var.settings.bgp.peers : p.name => {
    address        = p.address
    remote_asn     = var.settings.bgp.asn
    keepalive_time = p.keepalive_time
    hold_time      = p.hold_time
    bfd_profile    = p.bfd_profile == null ? null : one([for b in var.settings.bgp.bfd_profiles : b if b.name == p.bfd_profile])
    neighbors = sort([for name, h in local.active :
      (length(split(":", p.address)) > 1 ? h.address6 : h.address)
      if(p.hosts == null || contains(coalesce(p.hosts, []), name)) && (length(split(":", p.address)) > 1 ? h.address6 != null : true)
    ])
  } }
}
