// Package ipam owns the addresses of load balancers: the address book
// every Service's workspace renders with (Book), for the controller and
// the CLI alike, and the rules behind it where tfccm allocates (the cloud
// config's load_balancer.address_pool blocks and the AddressPool objects,
// merged by one precedence rule, package poolapi's): which pool serves a
// Service (annotation, or the pools' namespace and label selectors by
// priority), the addresses a Service chose, the addresses kept from a
// Service's status, and MetalLB's rules for sharing one address between
// Services. Templates only claim the addresses it picks
// (service.load_balancer_ips, service.shared_ip).
//
// The controller keeps one Book up to date from the Services informer;
// `tfccm render` and `tfccm plan` build one (Offline) from the cluster's
// Services or the Service's own status, so they render what the controller
// applies. The book is in memory and rebuilt from the Services' status
// after a restart (Restore); the hosts' own claims (lbhost) refuse an
// address held by another load balancer, so a restart during an apply
// cannot give one address to two Services.
package ipam
