variable "load_balancer_name" {
  type = string
}

variable "service" {
  type = object({
    ports = list(object({
      protocol  = string
      port      = number
      node_port = number
    }))
    load_balancer_ip = string
    shared_ip        = string # tfccm.io/allow-shared-ip: refused (see main.tf)
    source_ranges    = list(string)
    ip_families      = list(string)
    session_affinity = string
    proxy_protocol   = bool
    internal         = bool
  })

  validation {
    condition     = alltrue([for p in var.service.ports : p.node_port != null])
    error_message = "Every Service port needs a nodePort: DigitalOcean load balancers forward to the nodes' node ports (spec.allocateLoadBalancerNodePorts must not be false)."
  }
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
    region                   = string
    vpc_uuid                 = optional(string)
    project_id               = optional(string)
    size_unit                = optional(number, 1)
    hostname                 = optional(string)
    health_check_interval    = optional(number, 3)
    health_check_timeout     = optional(number, 5)
    health_check_unhealthy   = optional(number, 3)
    health_check_healthy     = optional(number, 5)
    disable_lets_encrypt_dns = optional(bool, true)
  })

  validation {
    condition     = can(regex("^[a-z]{3}[0-9]$", var.settings.region))
    error_message = "settings.region must be a DigitalOcean region slug such as nyc3 or fra1."
  }
  validation {
    condition     = var.settings.size_unit >= 1 && var.settings.size_unit <= 100 && floor(var.settings.size_unit) == var.settings.size_unit
    error_message = "settings.size_unit must be a whole number from 1 to 100."
  }
  validation {
    condition     = var.settings.health_check_interval >= 3 && var.settings.health_check_interval <= 300 && var.settings.health_check_timeout >= 3 && var.settings.health_check_timeout <= 300
    error_message = "settings.health_check_interval and health_check_timeout must be from 3 to 300 seconds."
  }
  validation {
    condition     = var.settings.health_check_unhealthy >= 2 && var.settings.health_check_unhealthy <= 10 && var.settings.health_check_healthy >= 2 && var.settings.health_check_healthy <= 10
    error_message = "settings.health_check_unhealthy and health_check_healthy must be from 2 to 10."
  }
  validation {
    condition     = var.settings.hostname == null || can(regex("^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$", var.settings.hostname))
    error_message = "settings.hostname must be a DNS name."
  }
}
