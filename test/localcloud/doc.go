// Package localcloud brings the local cloud (examples/local/infra) up and
// down with the real OpenTofu binary and runs servers inside its node
// network namespaces. End-to-end tests and `make demo` use it; it needs root
// (network namespaces, veth links, routes) and HAProxy.
//
// Several clouds may run at once: each has its own name prefix, and Up picks
// a host<->cloud transit /30 and a VIP pool that no other route on the host
// uses, under a host-wide lock.
package localcloud
