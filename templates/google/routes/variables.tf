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

  validation {
    condition     = alltrue([for r in var.routes : !r.blackhole])
    error_message = "Google Cloud routes need a next hop; blackhole routes are not possible."
  }
  validation {
    condition     = alltrue([for r in var.routes : !strcontains(r.destination_cidr, ":")])
    error_message = "IPv6 pod CIDRs cannot be routed to a node's address by this set (Google Cloud routes to a next-hop IP are IPv4 here): ${join(", ", [for r in var.routes : r.destination_cidr if strcontains(r.destination_cidr, ":")])}."
  }
}

variable "settings" {
  description = "routes.settings of the cloud config (see README.md)."
  type = object({
    project  = optional(string)
    network  = string
    priority = optional(number, 1000)
  })
}
