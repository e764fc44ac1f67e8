// Package host owns applying lbhost's objects (HAProxy frontends, VIPs,
// layer-4 load balancers, routed VIPs, kernel routes) to one load-balancer
// host through a transport, and reading back what is really there; and the
// allocation of a VIP's address and VRRP id across a group of hosts (under
// every reachable host's lock, recorded on each). Every change happens
// under the host's lock file, is checked on the host before it takes
// effect, and leaves the host as it was when the check fails.
package host
