// Package frrtest runs real FRR daemons (Debian's frr: zebra, bgpd and
// bfdd from /usr/lib/frr) in network namespaces for tests: a speaker
// under test and a top-of-rack router peering with it, linked by veth
// pairs. Tests using it need root and skip without.
package frrtest
