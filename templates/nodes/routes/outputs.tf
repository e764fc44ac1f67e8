output "routes" {
  description = "The routes that exist, by name."
  value = { for name, r in lbhost_route.route : name => {
    destination_cidr = r.destination
    target_node      = var.routes[name].target_node
    blackhole        = r.blackhole
  } }
}
