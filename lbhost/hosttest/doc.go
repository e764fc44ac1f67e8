// Package hosttest owns bare-metal load-balancer hosts run on this machine
// for tests, benchmarks and `make demo SET=baremetal`: one network
// namespace per host, attached to a local cloud's node bridge
// (test/localcloud), each running Debian's OpenSSH server (host key
// generated here), HAProxy in master-worker mode and keepalived, in the
// layout the lbhost provider expects (docs/lbhost.md), prepared by `tfccm
// lbhost prepare`'s own script (lbhost/hostfiles) with the shipped files
// unchanged but for their paths, or left fresh for a test to prepare
// (Options.Fresh). The CCM reaches them over SSH like real hosts.
//
// Addressing: the local cloud's VIP pool P (a /24 the machine routes into
// the cloud namespace) becomes a subnet of the cloud's bridge: P.1 is the
// cloud router, host i is P.(2+i) (its SSH and VRRP address, on eth0, with
// 10.250.0.(201+i) on the node network), and VIPs come from the upper half
// P.128/25, held by the VRRP master on eth0. The machine reaches a VIP
// through the cloud namespace, which ARPs for it on the bridge, so `curl
// VIP` follows a failover.
package hosttest
