output "routes" {
  description = "The routes as they exist in the network."
  value = {
    for name, r in hcloud_network_route.pod : name => {
      destination_cidr = r.destination
      target_node      = var.routes[name].target_node
      blackhole        = false
    }
  }
}
