# A trivial routes template for the batching benchmark: one terraform_data
# per route, no local-exec, so 1,000 routes plan and apply quickly.
resource "terraform_data" "route" {
  for_each = var.routes

  input = {
    destination_cidr = each.value.destination_cidr
    target_node      = each.value.target_node
    blackhole        = each.value.blackhole
  }
}
