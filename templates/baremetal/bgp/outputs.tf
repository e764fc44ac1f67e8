output "speakers" {
  description = "Per active LB host, the hash of its FRR configuration (passwords masked)."
  value       = { for name, s in lbhost_bgp_speaker.host : name => s.config_hash }
}

output "router_neighbors" {
  description = "The router side of the peering, from the same settings: per peer (by name; the routers of settings.bgp.routers too), the router's address and the neighbors it must configure (the active LB hosts that peer with it: their peer_addresses for it, else their IPv4 addresses for an IPv4 peer and their address6 for an IPv6 one), their AS, timers, BFD profile, the path of the router's copy of the password (router_password_file; never the password) and the prefixes to accept (host routes inside them). A router template (docs/bgp.md) configures its neighbors from it, so a new LB host is one change to settings.hosts."
  value       = local.router_neighbors
}

output "routers" {
  description = "Per Linux router of settings.bgp.routers, the hash of tfccm's section of its FRR configuration (passwords masked)."
  value       = { for name, r in lbhost_bgp_router.router : name => r.config_hash }
}
