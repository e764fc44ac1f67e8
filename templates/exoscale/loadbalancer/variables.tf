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
    error_message = "Every Service port needs a nodePort: Exoscale network load balancer services forward to the instance pool's node ports (spec.allocateLoadBalancerNodePorts must not be false)."
  }
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
    zone                  = string
    instance_pool_id      = string
    labels                = optional(map(string), {})
    health_check_interval = optional(number, 10)
    health_check_timeout  = optional(number, 5)
    health_check_retries  = optional(number, 1)
  })

  validation {
    condition     = can(regex("^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", var.settings.instance_pool_id))
    error_message = "settings.instance_pool_id must be the UUID of the instance pool whose instances are the cluster's nodes."
  }
}
