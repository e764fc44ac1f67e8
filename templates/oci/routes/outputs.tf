output "routes" {
  description = "The pod routes present in the route table."
  value = {
    for name, r in var.routes : name => {
      destination_cidr = r.destination_cidr
      target_node      = r.target_node
      blackhole        = false
    }
    if contains([for rr in oci_core_route_table.pods.route_rules : rr.destination], r.destination_cidr)
  }
}
