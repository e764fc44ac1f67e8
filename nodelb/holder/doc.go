// Package holder owns the one rule that decides which node holds a VIP in
// node mode: the eligible nodes (Candidates) and, among them, the current
// holder while it stays eligible (Sticky), otherwise the one with the
// highest rendezvous hash of the address and the node's name (Choose).
// Every agent applies it to the state it watches, so agents that see the
// same Nodes, endpoints, membership and NodeVIP status pick the same
// holder, a node leaving moves only the VIPs it held, and a node returning
// takes none back.
package holder
