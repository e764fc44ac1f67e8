# Node mode's BGP peering, once per cluster (docs/bgp.md, node mode): the
# NodeBGP object (lbhost_node_bgp) from settings.bgp: the nodes' AS, their
# peers (per rack with a node selector), BFD profiles and the pools whose
# /32 and /128 routes they announce, with their communities and local
# preference. Every node agent (chart value nodeAgent.bgp.enabled)
# configures its node's own FRR from it; the announcements themselves are
# per Service (../loadbalancer.bgp/). Every value is checked at plan by
# the provider, naming the setting. Passwords are never settings: a peer
# names a key of a Secret in tfccm's namespace that the agents read.
provider "lbhost" {
  kubernetes = {
    namespace = var.settings.namespace
  }
}

resource "lbhost_node_bgp" "nodes" {
  asn           = var.settings.bgp.asn
  node_networks = var.settings.bgp.node_networks
  wait_timeout  = var.settings.bgp.wait_timeout
  peers = [for p in var.settings.bgp.peers : {
    name            = p.name
    address         = p.address
    asn             = p.asn
    port            = p.port
    keepalive_time  = p.keepalive_time
    hold_time       = p.hold_time
    password_secret = p.password_secret
    bfd_profile     = p.bfd_profile
    ibgp            = p.ibgp
    node_selector   = p.node_selector
  }]
  bfd_profiles = [for b in var.settings.bgp.bfd_profiles : {
    name              = b.name
    receive_interval  = b.receive_interval_ms
    transmit_interval = b.transmit_interval_ms
    detect_multiplier = b.detect_multiplier
  }]
  pools = [for p in var.settings.bgp.pools : {
    name        = p.name
    prefixes    = p.prefixes
    communities = p.communities
    local_pref  = p.local_preference
  }]
}
