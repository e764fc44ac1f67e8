variable "prefix" {
  description = "Prefix of every name the local cloud creates (netns, links, state_dir). Up to 10 characters so that link names stay within the kernel's 15-character limit."
  type        = string
  default     = "tfccm"

  validation {
    condition     = can(regex("^[a-z][a-z0-9]{0,9}$", var.prefix))
    error_message = "The prefix must be 1-10 lowercase letters or digits, starting with a letter."
  }
}

variable "nodes" {
  description = "Nodes of the cloud: name => { index (2-254, the last octet of the node address), zone, region, instance_type, ipv6 }."
  type = map(object({
    index         = number
    zone          = string
    region        = string
    instance_type = string
    ipv6          = bool
  }))
  default = {
    "node-a" = { index = 11, zone = "local-a", region = "local", instance_type = "local.small", ipv6 = true }
    "node-b" = { index = 12, zone = "local-a", region = "local", instance_type = "local.small", ipv6 = true }
    "node-c" = { index = 13, zone = "local-b", region = "local", instance_type = "local.large", ipv6 = true }
  }

  validation {
    condition     = alltrue([for name, n in var.nodes : can(regex("^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$", name))])
    error_message = "Node names must be 1-40 lowercase letters, digits or '-', starting and ending with a letter or digit."
  }
  validation {
    condition     = alltrue([for n in var.nodes : n.index >= 2 && n.index <= 254 && floor(n.index) == n.index])
    error_message = "Node index must be a whole number from 2 to 254 (10.250.0.1 is the cloud router)."
  }
  validation {
    condition     = length(distinct([for n in var.nodes : n.index])) == length(var.nodes)
    error_message = "Node indexes must be unique."
  }
  validation {
    condition = alltrue(flatten([for n in var.nodes : [
      for v in [n.zone, n.region, n.instance_type] : can(regex("^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$", v))
    ]]))
    error_message = "Node zone, region and instance_type must be 1-63 letters, digits, '.', '_' or '-'."
  }
}

variable "vip_pool" {
  description = "IPv4 CIDR that load balancer VIPs are allocated from; the host routes it into the cloud netns."
  type        = string
  default     = "10.252.0.0/24"

  validation {
    condition     = can(regex("^([0-9]{1,3}\\.){3}[0-9]{1,3}/([8-9]|[12][0-9]|30)$", var.vip_pool)) && can(cidrhost(var.vip_pool, 1))
    error_message = "The vip_pool must be an IPv4 CIDR with a prefix length from 8 to 30, such as 10.252.0.0/24."
  }
}

variable "vip_pool6" {
  description = "IPv6 CIDR that IPv6 load balancer VIPs are allocated from (the templates' settings.vip_pool6). They are reached from the cloud netns and the IPv6 nodes; the host has no IPv6 route into the cloud."
  type        = string
  default     = "fd00:252::/112"

  validation {
    condition     = can(regex("^[0-9a-f:]+/([4-9][0-9]|1[01][0-9]|12[0-6])$", var.vip_pool6)) && try(cidrsubnet(var.vip_pool6, 0, 0) == var.vip_pool6, false)
    error_message = "The vip_pool6 must be an IPv6 network CIDR in canonical form with a prefix length from 40 to 126, such as fd00:252::/112."
  }
}

variable "transit_cidr" {
  description = "IPv4 /30 between the host (first address) and the cloud netns (second address)."
  type        = string
  default     = "10.251.0.0/30"

  validation {
    condition     = can(regex("^([0-9]{1,3}\\.){3}[0-9]{1,3}/30$", var.transit_cidr)) && can(cidrhost(var.transit_cidr, 2))
    error_message = "The transit_cidr must be an IPv4 /30, such as 10.251.0.0/30."
  }
}

variable "state_dir" {
  description = "Directory for HAProxy's base config, LB config fragments, VIP claims, pid file and sockets. Default /run/<prefix>."
  type        = string
  default     = null

  validation {
    condition     = var.state_dir == null || can(regex("^/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)+$", var.state_dir))
    error_message = "The state_dir must be an absolute path of at least two components, of letters, digits, '.', '_' and '-' (it is removed on destroy)."
  }
}

variable "router_binary" {
  description = "The lbhost-router binary (make build: bin/lbhost-router). When set, the cloud runs it in its netns: the service behind routed-VIP load balancers (the local set's `routed` variant). Default: none."
  type        = string
  default     = null

  validation {
    condition     = var.router_binary == null || can(regex("^/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)+$", var.router_binary))
    error_message = "The router_binary must be an absolute path of letters, digits, '.', '_' and '-'."
  }
}
