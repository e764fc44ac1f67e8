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
    error_message = "Every Service port needs a nodePort: Hetzner Cloud load balancers forward to the nodes' node ports (spec.allocateLoadBalancerNodePorts must not be false)."
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
    location              = optional(string)
    network_zone          = optional(string, "eu-central")
    load_balancer_type    = optional(string, "lb11")
    algorithm             = optional(string, "round_robin")
    network_id            = optional(number)
    use_private_ip        = optional(bool, true)
    hostname              = optional(string)
    labels                = optional(map(string), {})
    health_check_interval = optional(number, 15)
    health_check_timeout  = optional(number, 10)
    health_check_retries  = optional(number, 3)
  })

  validation {
    condition     = contains(["round_robin", "least_connections"], var.settings.algorithm)
    error_message = "settings.algorithm must be round_robin or least_connections."
  }
  validation {
    condition     = var.settings.location != null || var.settings.network_zone != null
    error_message = "Set settings.location (e.g. fsn1) or settings.network_zone (e.g. eu-central)."
  }
  validation {
    condition     = var.settings.hostname == null || can(regex("^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$", var.settings.hostname))
    error_message = "settings.hostname must be a DNS name."
  }
}
