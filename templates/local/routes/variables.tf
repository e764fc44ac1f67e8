variable "cluster_name" {
  type = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,62}$", var.cluster_name))
    error_message = "cluster_name must be 1-63 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "routes" {
  type = map(object({
    destination_cidr      = string
    target_node           = string
    target_node_addresses = list(object({ type = string, address = string }))
    blackhole             = bool
  }))

  validation {
    condition = alltrue([for r in var.routes :
      can(cidrhost(r.destination_cidr, 0)) && can(regex("^[0-9a-fA-F.:]+/[0-9]{1,3}$", r.destination_cidr))
    ])
    error_message = "Every route's destination_cidr must be a CIDR such as 10.244.1.0/24 or fd00:10:244:1::/64."
  }
}

variable "settings" {
  description = "From the cloud config's routes.settings; the local cloud's infra outputs cloud_netns."
  type = object({
    cloud_netns = string
  })

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9-]{0,61}$", var.settings.cloud_netns))
    error_message = "settings.cloud_netns must be a netns name (the local cloud's cloud_netns output)."
  }
}
