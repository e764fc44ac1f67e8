output "configured_nodes" {
  description = "The nodes whose FRR held the peering when apply returned."
  value       = lbhost_node_bgp.nodes.configured_nodes
}
