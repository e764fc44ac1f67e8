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
    error_message = "Every Service port needs a nodePort: Octavia pool members are the nodes' node ports (spec.allocateLoadBalancerNodePorts must not be false)."
  }
}

variable "nodes" {
  type = list(object({
    name      = string
    addresses = list(object({ type = string, address = string }))
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
    subnet_id             = optional(string)
    network_id            = optional(string)
    member_subnet_id      = optional(string)
    floating_network      = optional(string)
    flavor_id             = optional(string)
    availability_zone     = optional(string)
    loadbalancer_provider = optional(string)
    lb_method             = optional(string)
    octavia_api_version   = optional(string, "2.16")
    tags                  = optional(list(string), [])
    monitor_delay         = optional(number, 5)
    monitor_timeout       = optional(number, 3)
    monitor_max_retries   = optional(number, 1)
    monitor_retries_down  = optional(number, 3)
  })

  validation {
    condition     = var.settings.subnet_id != null || var.settings.network_id != null
    error_message = "Set settings.subnet_id (or settings.network_id): the subnet the load balancer's VIP port is created in."
  }
  validation {
    condition     = var.settings.lb_method == null || contains(["ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT"], coalesce(var.settings.lb_method, "-"))
    error_message = "settings.lb_method must be ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP or SOURCE_IP_PORT (the ovn provider supports SOURCE_IP_PORT only)."
  }
  validation {
    condition     = can(regex("^2\\.[0-9]+$", var.settings.octavia_api_version))
    error_message = "settings.octavia_api_version must be the cloud's Octavia API version, 2.<minor> (`openstack versions show --service load-balancer`)."
  }
  validation {
    condition     = var.settings.monitor_timeout <= var.settings.monitor_delay
    error_message = "settings.monitor_timeout must not exceed settings.monitor_delay (Octavia refuses it)."
  }
}
