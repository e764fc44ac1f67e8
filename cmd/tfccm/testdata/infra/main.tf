# Two instances in the local cloud's state shape (see templates/CONTRACT.md),
# for `tfccm state query` tests.
resource "terraform_data" "node" {
  for_each = {
    alpha = { address = "10.250.0.21", zone = "z1", type = "local.small" }
    beta  = { address = "10.250.0.22", zone = "z2", type = "local.large" }
  }
  input = {
    kind          = "instance"
    name          = each.key
    netns         = "t-n-${each.key}"
    address       = each.value.address
    address_v6    = null
    zone          = each.value.zone
    region        = "r1"
    instance_type = each.value.type
    running       = each.key == "alpha"
  }
}
