// Package frrvty is a client of FRR's daemon vty sockets (zebra.vty,
// bgpd.vty, bfdd.vty in /var/run/frr): the node agent configures the
// node's FRR through them, as vtysh does, without a vtysh binary in its
// image.
//
// The framing is vtysh's: a command is written as its text followed by a
// NUL byte; the daemon answers with the command's output followed by
// three NUL bytes and one byte holding the command's return code (0:
// success). A connection keeps its node (a "configure" enters the
// configuration node, "router bgp 64513" its router node) until it is
// closed or leaves it ("exit", "end").
package frrvty
