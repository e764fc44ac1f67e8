// Package agent is the node-mode agent (`tfccm node-agent`, a DaemonSet on
// the nodes that may hold VIPs): it watches the NodeVIP objects of tfccm's
// namespace, the Nodes and the EndpointSlices, keeps a gossip membership
// with the other agents, applies package holder's rule to every address,
// puts the addresses it holds on its node and takes the others off
// (package announce), gossips its own eligibility (capabilities, kubelet
// health), and reports the holder in each NodeVIP's status with a Warning
// Event when a VIP cannot be served. It writes nothing but NodeVIP status
// and Events.
package agent
