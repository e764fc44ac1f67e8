// Package router owns the routed-VIP service of an lbhost host: for every
// routed VIP (a JSON file per VIP in a directory, written by the provider's
// lbhost_routed_vip resource) it health-checks the VIP's next hops and
// keeps one kernel route to the VIP: ECMP over the next hops that pass the
// check, none when none does. The kernel hashes flows (addresses and ports)
// over the next hops; a VIP whose Hash is "client" (a Service with
// client-IP session affinity) is hashed by client address instead, so all
// of a client's connections reach one next hop. The VIP itself lives on
// the next hops (kube-proxy serves a load balancer IP of `ip_mode =
// "VIP"`), so the host only routes: client addresses are preserved and any
// protocol passes.
//
// Routes it owns carry the protocol number Proto, so a route whose file is
// gone is removed even after a restart.
package router
