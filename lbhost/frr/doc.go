// Package frr writes the FRR configuration (bgpd, bfdd) that announces a
// host's load-balancer addresses over BGP: its peers (address, ASN, port,
// timers, password, BFD profile), its BFD profiles, and per address pool
// the communities and local preference its announcements carry.
//
// The configuration is typed: every value is checked (a field-naming
// *Error) and written by this package, never spliced in as given. What is
// announced is whatever /32 or /128 kernel route inside a pool the host
// has (bgpd redistributes kernel routes through a route map that permits
// only the pools' host routes), so a host withdraws an address by removing
// its route: lbhost-router's announcer does that when the address's
// frontend fails its health check (package announce). The configuration
// therefore changes with the peering, never per address.
//
// Routes the peers send are refused (the host is a leaf that announces,
// it never routes by BGP), so a peer cannot move the host's own traffic.
// The same writer serves LB hosts and, later, cluster nodes.
package frr
