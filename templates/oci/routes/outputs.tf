output "routes" {
  description = "The pod routes present in the route table: all of var.routes once the table is applied (its rules are written in one call). Derived from the table's id, not its route_rules, which carry the deprecated cidr_block."
  value = {
    for name, r in var.routes : name => {
      destination_cidr = r.destination_cidr
      target_node      = r.target_node
      blackhole        = false
    }
    if oci_core_route_table.pods.id != null
  }
}
