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
  # Only what the template uses: tfccm renders only declared inputs, so an
  # edit to anything else (annotations, labels) costs no plan.
  type = object({
    ports = list(object({
      name      = string
      protocol  = string
      port      = number
      node_port = number
    }))
    load_balancer_ips = optional(list(string), []) # one per family: tfccm's allocation, or the Service's choice
    shared_ip         = string                     # tfccm.io/allow-shared-ip with address pools: one token per shared VIP
    source_ranges     = list(string)
    ip_families       = list(string)                    # the families wanted, primary first
    ip_family_policy  = optional(string, "SingleStack") # | PreferDualStack | RequireDualStack
    session_affinity  = string
    proxy_protocol    = bool
    announce          = optional(bool, true) # false: prepared while MetalLB still announces (the VIP claimed, not raised)
  })

  validation {
    condition     = alltrue([for p in var.service.ports : p.protocol == "TCP"])
    error_message = "The local load balancer (HAProxy) supports only TCP ports; unsupported: ${join(", ", [for p in var.service.ports : "port ${p.port}/${p.protocol}" if p.protocol != "TCP"])}."
  }
  validation {
    condition = alltrue([for p in var.service.ports :
      floor(p.port) == p.port && p.port >= 1 && p.port <= 65535 &&
    p.node_port != null && floor(coalesce(p.node_port, 0)) == p.node_port && coalesce(p.node_port, 0) >= 1 && coalesce(p.node_port, 0) <= 65535])
    error_message = "Every port needs a port and a node_port from 1 to 65535."
  }
  validation {
    condition     = length(distinct([for p in var.service.ports : p.port])) == length(var.service.ports)
    error_message = "Two Service ports use the same port number; the local load balancer listens on each port once."
  }
  validation {
    condition     = alltrue([for a in var.service.load_balancer_ips : can(cidrhost("${a}/${strcontains(a, ":") ? 128 : 32}", 0))]) && length(distinct([for a in var.service.load_balancer_ips : strcontains(a, ":")])) == length(var.service.load_balancer_ips)
    error_message = "The requested load balancer IPs must be at most one IPv4 and one IPv6 address."
  }
  validation {
    condition     = alltrue([for a in var.service.load_balancer_ips : contains(var.service.ip_families, strcontains(a, ":") ? "IPv6" : "IPv4")])
    error_message = "A requested load balancer IP is of a family the Service's ipFamilies (${join(", ", var.service.ip_families)}) does not have."
  }
  validation {
    condition     = alltrue([for r in var.service.source_ranges : can(cidrhost(r, 0)) && can(regex("^[0-9a-fA-F.:]+/[0-9]{1,3}$", r))])
    error_message = "Every load balancer source range must be a CIDR such as 10.0.0.0/8 or 2001:db8::/32."
  }
  validation {
    condition     = length(var.service.ip_families) > 0 && alltrue([for f in var.service.ip_families : contains(["IPv4", "IPv6"], f)])
    error_message = "ipFamilies must be IPv4, IPv6 or both."
  }
  validation {
    condition     = contains(["None", "ClientIP"], coalesce(var.service.session_affinity, "None"))
    error_message = "session_affinity must be None or ClientIP."
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
    vip_pool6   = optional(string) # IPv6 VIPs (the local cloud's vip_pool6 output); unset: IPv4 VIPs only
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
  validation {
    condition     = var.settings.vip_pool6 == null || can(regex("^[0-9a-f:]+::?[0-9a-f:]*/([4-9][0-9]|1[01][0-9]|12[0-6])$", coalesce(var.settings.vip_pool6, "-"))) && try(cidrsubnet(var.settings.vip_pool6, 0, 0) == var.settings.vip_pool6, false)
    error_message = "settings.vip_pool6 must be an IPv6 network CIDR in canonical form with a prefix length from 40 to 126, such as fd00:252::/112 (the local cloud's vip_pool6 output)."
  }
}
