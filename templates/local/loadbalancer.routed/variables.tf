variable "cluster_name" {
  type = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,62}$", var.cluster_name))
    error_message = "cluster_name must be 1-63 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "load_balancer_id" {
  # tfccm's "<cluster>-<hash of the Service UID>", never the tenant's
  # tfccm.io/name: it keys this load balancer's VIP claim, frontend and
  # VRRP instance on the hosts, so no two Services ever share them.
  type = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9-]{0,31}$", var.load_balancer_id))
    error_message = "load_balancer_id must be 1-32 lowercase letters, digits or '-'."
  }
}

variable "service" {
  type = object({
    load_balancer_ip = string
    shared_ip        = string # tfccm.io/allow-shared-ip with address pools: one token per shared VIP
    ip_families      = list(string)
    ip_family_policy = optional(string, "SingleStack")
    session_affinity = string
    proxy_protocol   = bool
  })

  validation {
    condition     = var.service.load_balancer_ip == null || can(regex("^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$", var.service.load_balancer_ip))
    error_message = "The requested load balancer IP must be an IPv4 address (the local cloud has IPv4 VIPs only)."
  }
  validation {
    condition     = contains(var.service.ip_families, "IPv4")
    error_message = "The local routed load balancer has IPv4 VIPs only: ipFamilies must include IPv4 (the default variant, HAProxy, has IPv6 VIPs)."
  }
  validation {
    condition     = var.service.ip_family_policy != "RequireDualStack"
    error_message = "The local routed load balancer has IPv4 VIPs only, and the Service requires dual-stack (ipFamilyPolicy RequireDualStack): use the default variant (HAProxy) for IPv6 and dual-stack VIPs, or PreferDualStack for an IPv4 VIP only."
  }
  validation {
    condition     = !var.service.proxy_protocol
    error_message = "A routed VIP does not proxy, so it cannot send the PROXY protocol: client addresses reach the pods as they are (use the default local load balancer for PROXY protocol)."
  }
}

variable "nodes" {
  type = list(object({
    name      = string
    addresses = list(object({ type = string, address = string }))
  }))

  validation {
    condition     = alltrue([for n in var.nodes : can(regex("^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$", n.name))])
    error_message = "Node names must be Kubernetes DNS subdomain names."
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
  description = "From the cloud config's load_balancer.settings; the local cloud's infra outputs state_dir, cloud_netns and vip_pool."
  type = object({
    state_dir   = string
    cloud_netns = string
    vip_pool    = string
  })

  validation {
    condition     = can(regex("^/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)+$", var.settings.state_dir))
    error_message = "settings.state_dir must be an absolute path (the local cloud's state_dir output)."
  }
  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9-]{0,61}$", var.settings.cloud_netns))
    error_message = "settings.cloud_netns must be a netns name (the local cloud's cloud_netns output)."
  }
  validation {
    condition     = can(regex("^([0-9]{1,3}\\.){3}[0-9]{1,3}/([8-9]|[12][0-9]|30)$", var.settings.vip_pool)) && can(cidrhost(var.settings.vip_pool, 1))
    error_message = "settings.vip_pool must be an IPv4 CIDR with a prefix length from 8 to 30 (the local cloud's vip_pool output)."
  }
}
