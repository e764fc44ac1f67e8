// Package nodelb is node mode: load balancers served by the cluster's own
// nodes (docs/node-mode.md). It holds no code; its packages each do one job:
//
//   - vipapi: the NodeVIP object (desired state of one VIP, written by the
//     lbhost provider's lbhost_node_vip resource; status written by the
//     agents) and its conversions from the dynamic client.
//   - holder: the one rule that picks a VIP's holder among eligible nodes.
//   - announce: answering ARP and neighbor solicitations for the VIPs a
//     node holds, and announcing a new holder (gratuitous ARP,
//     unsolicited NA), without adding anything to the node.
//   - agent: the node agent (`tfccm node-agent`): membership by gossip,
//     watches, the reconcile loop and status reports.
package nodelb
