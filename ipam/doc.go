// Package ipam decides the addresses of load balancers where tfccm
// allocates them (the cloud config's load_balancer.address_pool blocks):
// which pool serves a Service (annotation, or the pools' namespace and
// label selectors by priority), the addresses a Service chose, and
// MetalLB's rules for sharing one address between Services. It is the one
// owner of these rules; templates only claim the addresses it picks
// (service.load_balancer_ips, service.shared_ip).
//
// The allocator is in memory and rebuilt from the Services' status after a
// restart (Restore); the hosts' own claims (lbhost) refuse an address held
// by another load balancer, so a restart during an apply cannot give one
// address to two Services.
package ipam
