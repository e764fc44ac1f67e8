variable "load_balancer_id" {
  # tfccm's "<cluster>-<hash of the Service UID>": names the NodeVIP objects.
  type = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9-]{0,31}$", var.load_balancer_id))
    error_message = "load_balancer_id must be 1-32 lowercase letters, digits or '-'."
  }
}

variable "service" {
  type = object({
    uid                     = string
    namespace               = string
    name                    = string
    ports                   = list(object({ protocol = string, port = number }))
    load_balancer_ips       = list(string)
    external_traffic_policy = string
    ip_families             = list(string)
    proxy_protocol          = bool
    announce                = optional(bool, true) # false: prepared while MetalLB still announces (NodeVIP on standby: no node holds it)
  })

  validation {
    condition     = !var.service.proxy_protocol
    error_message = "Node mode does not proxy, so it cannot send the PROXY protocol: client addresses reach the pods as they are with externalTrafficPolicy: Local."
  }
}

variable "nodes" {
  type = list(object({
    name   = string
    labels = map(string)
  }))
}

variable "settings" {
  description = "From the cloud config's load_balancer.settings (docs/node-mode.md)."
  type = object({
    # tfccm's namespace: the NodeVIP objects live there, the node agents watch it.
    namespace = string
    # The nodes that may hold VIPs: labels they must all carry (default: every node).
    node_selector = optional(map(string), {})
    # The interface VIPs go on; default the holder's interface whose network holds the VIP.
    interface = optional(string)
    # How long apply waits for the agents to announce an address.
    wait_timeout = optional(string, "30s")
  })

  validation {
    condition     = can(regex("^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$", var.settings.namespace))
    error_message = "settings.namespace must be a namespace name (tfccm's, where the chart installed the node agents)."
  }
  validation {
    condition     = var.settings.interface == null || can(regex("^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$", coalesce(var.settings.interface, "-")))
    error_message = "settings.interface must be an interface name (e.g. eth0)."
  }
  validation {
    condition     = can(regex("^[0-9]+(ms|s|m)$", var.settings.wait_timeout))
    error_message = "settings.wait_timeout must be a duration such as 30s or 2m."
  }
}
