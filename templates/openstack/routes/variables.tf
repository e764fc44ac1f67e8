variable "routes" {
  type = map(object({
    destination_cidr      = string
    target_node           = string
    target_node_addresses = list(object({ type = string, address = string }))
    blackhole             = bool
  }))

  validation {
    condition     = alltrue([for r in var.routes : !r.blackhole])
    error_message = "OpenStack router routes need a next hop; blackhole routes are not possible."
  }
}

variable "settings" {
  description = "routes.settings of the cloud config (see README.md)."
  type = object({
    router_id = string
  })
}
