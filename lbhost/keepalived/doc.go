// Package keepalived owns one VIP's keepalived VRRP instance (unicast
// peers, priority, nopreempt) as a configuration fragment: rendering it and
// parsing it back. It is pure: no I/O.
package keepalived
