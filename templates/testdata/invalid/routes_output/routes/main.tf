variable "routes" {
  type = map(object({ destination_cidr = string, target_node = string }))
}
