// Package haproxy owns one load balancer's HAProxy configuration fragment:
// rendering it from a typed Frontend, parsing it back (so that what is
// really on a host can be compared with what was applied), and filtering
// HAProxy's server-state file so that health state survives a reload only
// for servers whose address, port and check are unchanged. It is pure: no
// I/O.
package haproxy
