variable "cluster_name" {
  type = string
}

variable "routes" {
  type = map(object({
    destination_cidr      = string
    target_node           = string
    target_node_addresses = list(object({ type = string, address = string }))
    blackhole             = bool
  }))
}

variable "settings" {
  type = map(string)
}

output "routes" {
  value = { for k, r in var.routes : k => { destination_cidr = r.destination_cidr, target_node = r.target_node, blackhole = r.blackhole } }
}
