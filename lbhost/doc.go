// Package lbhost is tfccm's lbhost product: the Terraform provider
// tfccm/lbhost for Linux load-balancer hosts (HAProxy frontends, keepalived
// VIPs, nftables layer-4 load balancers, routed VIPs and kernel routes,
// reached over ssh or in a network namespace), the daemon those hosts run,
// the files a host is prepared with, and the tests on real hosts. It owns
// everything of the product and nothing of the cloud controller manager,
// which only runs the provider through OpenTofu; nothing here imports the
// CCM's packages.
//
// The tree, from the entry points down:
//
//	cmd/terraform-provider-lbhost  the provider's main (make build installs it into bin/providers)
//	cmd/lbhost-router              the host daemon's main: routed VIPs and layer-4 load balancers
//	tfprovider                     the provider: schemas, plans and state, mapped onto host
//	host                           applying objects to one host and reading them back
//	haproxy, keepalived            a fragment each: rendered, parsed back
//	router, l4                     the daemon's services: routed VIPs, nftables load balancers
//	transport                      reaching a host: ssh or a network namespace
//	mirror                         where the provider lives in a filesystem mirror
//	hostfiles                      the files an LB host is prepared with, and the check of a host
//	hosttest                       LB hosts in network namespaces, for tests, benchmarks and the demo
package lbhost
