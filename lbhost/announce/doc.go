// Package announce owns the BGP announcer of an lbhost host: for every
// announced address (a JSON file per load balancer in a directory, written
// by the provider's lbhost_bgp_announcement resource) it keeps the address
// local to the host (a local route on the loopback), and a route to it in
// the main table while the load balancer's frontend serves it (something listens on
// every frontend port of the address) and at least one backend passes the
// health check. FRR's bgpd (configured by package frr) redistributes
// exactly those routes inside its pools, so adding the route announces the
// address and removing it withdraws it, within one check interval, while
// the address stays local: connections the routers still send here before
// they converge are served, not dropped.
//
// Its routes carry the protocol Proto, so whatever a gone file left is
// removed even after a restart, and nobody else's is touched.
package announce
