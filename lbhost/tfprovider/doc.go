// Package tfprovider owns the Terraform provider "lbhost" (built with
// terraform-plugin-framework): the schemas and documentation of the
// resources lbhost_frontend (an HAProxy load balancer), lbhost_l4_frontend
// (a layer-4 nftables load balancer), lbhost_vip (an address claimed from a
// pool), lbhost_routed_vip (a VIP the host routes) and lbhost_route (a
// kernel route), and of the data sources lbhost_backend_health and
// lbhost_vip_holder (whether the host holds a VRRP VIP now), on one Linux
// load-balancer host reached through the netns or the ssh transport;
// lbhost_vip_allocation (a VIP's address and VRRP id decided across a group
// of hosts) and the data source lbhost_hosts (which of them answer) for a
// provider of every host of a group (`hosts`); and
// the mapping of Terraform's plans and state onto package host, which does
// the host-side work.
package tfprovider

//go:generate go test -run ^TestDocs$ -update .
