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
    error_message = "Every Service port needs a nodePort: OCI network load balancers forward to the nodes' node ports (spec.allocateLoadBalancerNodePorts must not be false)."
  }
}

variable "nodes" {
  type = list(object({
    name        = string
    provider_id = string
    addresses   = list(object({ type = string, address = string }))
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
    compartment_id       = string
    subnet_id            = string
    vcn_id               = optional(string)
    nsg_ids              = optional(list(string), [])
    hostname             = optional(string)
    health_check_millis  = optional(number, 10000)
    health_check_retries = optional(number, 3)
    freeform_tags        = optional(map(string), {})
  })

  validation {
    condition     = startswith(var.settings.compartment_id, "ocid1.") && startswith(var.settings.subnet_id, "ocid1.subnet.")
    error_message = "settings.compartment_id and settings.subnet_id must be OCIDs (ocid1.compartment..., ocid1.subnet...)."
  }
  validation {
    condition     = var.settings.vcn_id == null || startswith(coalesce(var.settings.vcn_id, "-"), "ocid1.vcn.")
    error_message = "settings.vcn_id must be a VCN OCID (ocid1.vcn...)."
  }
  validation {
    condition     = var.settings.health_check_millis >= 1000 && var.settings.health_check_millis <= 1800000
    error_message = "settings.health_check_millis must be from 1000 to 1800000."
  }
  validation {
    condition     = var.settings.hostname == null || can(regex("^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$", var.settings.hostname))
    error_message = "settings.hostname must be a DNS name."
  }
}
