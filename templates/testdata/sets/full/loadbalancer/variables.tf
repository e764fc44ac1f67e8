# Declares every input of the load balancer contract with its exact type.
variable "cluster_name" {
  type = string
}

variable "load_balancer_name" {
  type = string
}

variable "service" {
  type = object({
    uid         = string
    namespace   = string
    name        = string
    annotations = map(string)
    labels      = map(string)
    ports = list(object({
      name         = string
      protocol     = string
      port         = number
      node_port    = number
      app_protocol = string
    }))
    load_balancer_ip        = string
    source_ranges           = list(string)
    external_traffic_policy = string
    health_check_node_port  = number
    ip_families             = list(string)
    session_affinity        = string
    proxy_protocol          = bool
    internal                = bool
  })
}

variable "nodes" {
  type = list(object({
    name          = string
    provider_id   = string
    addresses     = list(object({ type = string, address = string }))
    zone          = string
    region        = string
    instance_type = string
    labels        = map(string)
  }))
}

variable "health_check" {
  type = object({ protocol = string, port = number, path = string })
}

variable "settings" {
  type = object({
    vip_pool = string
    size     = optional(string, "small")
    replicas = optional(number)
  })
}

variable "unused_with_default" {
  type    = string
  default = "kept"
}
