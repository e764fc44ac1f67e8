variable "cluster_name" {
  type = string
}

variable "load_balancer_name" {
  type = string
}

variable "service" {
  type = object({
    namespace = string
    name      = string
    ports = list(object({
      protocol = string
      port     = number
    }))
    load_balancer_ip = string
    shared_ip        = string # tfccm.io/allow-shared-ip: equal for every Service sharing the address
    source_ranges    = list(string)
    ip_families      = list(string)
    session_affinity = string
    proxy_protocol   = bool
    internal         = bool
  })
}

variable "nodes" {
  type = list(object({
    name        = string
    provider_id = string
  }))
}

variable "health_check" {
  type = object({ protocol = string, port = number, path = string })

  validation {
    condition     = contains(["HTTP", "HTTPS", "TCP"], var.health_check.protocol)
    error_message = "health_check.protocol must be HTTP, HTTPS or TCP."
  }
  validation {
    condition     = floor(var.health_check.port) == var.health_check.port && var.health_check.port >= 1 && var.health_check.port <= 65535
    error_message = "health_check.port must be from 1 to 65535."
  }
  validation {
    condition     = var.health_check.protocol == "TCP" || can(regex("^/[A-Za-z0-9._~/%-]{0,254}$", coalesce(var.health_check.path, "-")))
    error_message = "health_check.path must be an absolute URL path of letters, digits and ._~/%- characters."
  }
}


variable "settings" {
  description = "load_balancer.settings of the cloud config, merged with the Service's tfccm.io/vars (see README.md)."
  type = object({
    project             = optional(string)
    region              = string
    network             = string
    subnetwork          = string
    node_tags           = optional(list(string), [])
    network_tier        = optional(string, "PREMIUM")
    allow_global_access = optional(bool, false)
    labels              = optional(map(string), {})
    check_interval      = optional(number, 8)
    check_timeout       = optional(number, 1)
    healthy_threshold   = optional(number, 1)
    unhealthy_threshold = optional(number, 3)
  })

  validation {
    condition     = contains(["PREMIUM", "STANDARD"], var.settings.network_tier)
    error_message = "settings.network_tier must be PREMIUM or STANDARD."
  }
}
