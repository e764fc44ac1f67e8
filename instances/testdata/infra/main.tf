# A stand-in for examples/local/infra with the same state shape: each node
# is terraform_data.node["<name>"] whose input/output is the instance record
# of templates/CONTRACT.md. No local-exec: tests only need the state.

variable "nodes" {
  type = map(object({
    address       = string
    address_v6    = optional(string)
    zone          = string
    region        = string
    instance_type = string
    running       = optional(bool, true)
  }))
}

variable "secret" {
  type      = string
  default   = "s3cr3t-value"
  sensitive = true
}

resource "terraform_data" "node" {
  for_each = var.nodes
  input = {
    kind          = "instance"
    name          = each.key
    netns         = "tfccm-n-${each.key}"
    address       = each.value.address
    address_v6    = each.value.address_v6
    zone          = each.value.zone
    region        = each.value.region
    instance_type = each.value.instance_type
    running       = each.value.running
  }
}

# Not an instance: the mapping must ignore it.
resource "terraform_data" "router" {
  input = "cloud"
}

# Sensitive state the mapping must never publish.
resource "terraform_data" "credentials" {
  input = var.secret
}

output "nodes" {
  value = { for k, v in terraform_data.node : k => v.output }
}
