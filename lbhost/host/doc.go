// Package host owns applying lbhost's objects (HAProxy frontends, VIPs,
// layer-4 load balancers, routed VIPs, kernel routes) to one load-balancer
// host through a transport, and reading back what is really there. Every
// change happens under the host's lock file, is checked on the host before
// it takes effect, and leaves the host as it was when the check fails.
package host
