output "routes" {
  description = "The routes as they exist in the network."
  value = {
    for name, r in google_compute_route.pod : name => {
      destination_cidr = r.dest_range
      target_node      = var.routes[name].target_node
      blackhole        = false
    }
  }
}
