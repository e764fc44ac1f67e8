// Package announce owns the BGP announcer of an lbhost host: for every
// announced address (a JSON file per load balancer in a directory, written
// by the provider's lbhost_bgp_announcement resource) it keeps the address
// on the host's loopback while the load balancer's frontend serves it
// (something listens on every frontend port of the address) and at least
// one backend passes the health check, and removes it otherwise. FRR's
// bgpd (configured by package frr) announces exactly the pools' host
// routes on the host's interfaces, so adding the address announces it to
// the peers and removing it withdraws it, within one check interval.
//
// Addresses it adds carry the route metric Metric, so one whose file is
// gone is removed even after a restart, and nobody else's is touched.
package announce
