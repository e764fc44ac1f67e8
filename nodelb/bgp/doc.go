// Package bgp is the node agent's BGP speaker in BGP mode: it keeps
// tfccm's objects in the node's own FRR (peers, BFD profiles, the export
// and import route maps and their prefix lists, one `network` statement
// per announced address; all named tfccm-*, rendered by lbhost/frr's
// Node) equal to what the agent wants, through the daemons' vty sockets
// (package frrvty). It reads each daemon's running configuration, keeps
// the objects tfccm owns, and removes what is stale and adds what is
// missing, so an unchanged peering is never reset and the admin's own
// configuration (another `network`, a neighbour of their own, their route
// maps) stays as it is.
package bgp
