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
