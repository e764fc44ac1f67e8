// Package nodelb is node mode: load balancers served by the cluster's own
// nodes (docs/node-mode.md). It holds no code; its packages each do one job:
//
//   - vipapi: the NodeVIP object (desired state of one VIP, written by the
//     lbhost provider's lbhost_node_vip resource; status written by the
//     agents) and its conversions from the dynamic client.
//   - holder: the one rule that picks a VIP's holder among eligible nodes.
//   - announce: putting a VIP on a Linux interface, announcing it
//     (gratuitous ARP, unsolicited NA) and taking it off again.
//   - agent: the node agent (`tfccm node-agent`): membership by gossip,
//     watches, the reconcile loop and status reports.
package nodelb
