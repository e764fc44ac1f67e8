output "routes" {
  description = "The routes as they exist on the router."
  value = {
    for name, r in openstack_networking_router_route_v2.pod : name => {
      destination_cidr = r.destination_cidr
      target_node      = var.routes[name].target_node
      blackhole        = false
    }
  }
}
