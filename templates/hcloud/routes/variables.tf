variable "routes" {
  type = map(object({
    destination_cidr      = string
    target_node           = string
    target_node_addresses = list(object({ type = string, address = string }))
    blackhole             = bool
  }))

  validation {
    condition     = alltrue([for r in var.routes : !r.blackhole])
    error_message = "Hetzner Cloud network routes need a gateway; blackhole routes are not possible."
  }
  validation {
    condition     = alltrue([for r in var.routes : !strcontains(r.destination_cidr, ":")])
    error_message = "Hetzner Cloud networks are IPv4 only; IPv6 pod CIDRs cannot be routed (use an IPv4 --cluster-cidr or a CNI that does not need cloud routes for IPv6): ${join(", ", [for r in var.routes : r.destination_cidr if strcontains(r.destination_cidr, ":")])}."
  }
}

variable "settings" {
  description = "routes.settings of the cloud config (see README.md)."
  type = object({
    network_id = number
  })
}
