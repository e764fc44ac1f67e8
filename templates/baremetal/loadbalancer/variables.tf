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
    # By address: the segment of its address pool (network block); none: the settings' segment.
    segments = optional(map(object({
      pool      = string
      interface = optional(string)           # default settings.vrrp_interface
      hosts     = optional(list(string), []) # default every host
      subnet    = optional(string)           # default settings.vip_pool / vip_pool6
    })), {})
    source_ranges    = list(string)
    ip_families      = list(string)                    # the families wanted, primary first
    ip_family_policy = optional(string, "SingleStack") # | PreferDualStack | RequireDualStack
    session_affinity = string
    proxy_protocol   = bool
    announce         = optional(bool, true) # false: prepared while MetalLB still announces (no VRRP instance yet)
  })

  validation {
    condition     = alltrue([for p in var.service.ports : p.protocol == "TCP"])
    error_message = "The bare-metal load balancer (HAProxy) supports only TCP ports; unsupported: ${join(", ", [for p in var.service.ports : "port ${p.port}/${p.protocol}" if p.protocol != "TCP"])}."
  }
  validation {
    condition = alltrue([for p in var.service.ports :
      floor(p.port) == p.port && p.port >= 1 && p.port <= 65535 &&
    p.node_port != null && floor(coalesce(p.node_port, 0)) == p.node_port && coalesce(p.node_port, 0) >= 1 && coalesce(p.node_port, 0) <= 65535])
    error_message = "Every port needs a port and a node_port from 1 to 65535."
  }
  validation {
    condition     = length(distinct([for p in var.service.ports : p.port])) == length(var.service.ports)
    error_message = "Two Service ports use the same port number; the load balancer listens on each port once."
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
  description = "From the cloud config's load_balancer.settings (see the set's README.md): the LB hosts, the VIP pool and VRRP, the SSH key source."
  type = object({
    # The LB hosts by name (1-20 of [a-z0-9-]). Every host runs HAProxy and
    # keepalived; every Service gets a frontend and a VRRP instance on each.
    hosts = map(object({
      address  = string           # IPv4: SSH and VRRP unicast adverts
      address6 = optional(string) # IPv6: unicast adverts of IPv6 VIPs' instances (all hosts, or multicast)
      ssh_port = optional(number, 22)
      user     = optional(string, "root")
      sudo     = optional(bool)        # default settings.sudo
      host_key = optional(string)      # authorized_keys format; or known_hosts_file
      priority = optional(number)      # VRRP priority; default 250 - 10 x (hosts before it by name)
      retired  = optional(bool, false) # true: remove this host's objects (then drop the host)
      # Per-host overrides of the settings of the same name.
      config_dir          = optional(string)
      keepalived_config   = optional(string)
      keepalived_pid_file = optional(string)
    }))
    vip_pool             = string                    # IPv4 CIDR on the hosts' VRRP network
    vip_pool6            = optional(string)          # IPv6 CIDR on the same network; unset: IPv4 VIPs only
    vrrp_interface       = string                    # interface adverts are sent on and the VIP is added to
    virtual_router_ids   = optional(string, "1-255") # <first>-<last>: one id per Service, allocated with its VIP
    advert_int           = optional(number, 1)
    config_dir           = optional(string, "/etc/tfccm/lbhost")
    haproxy              = optional(string)
    keepalived_config    = optional(string)
    keepalived_pid_file  = optional(string)
    known_hosts_file     = optional(string)
    ssh_agent_socket     = optional(string)
    ssh_private_key_file = optional(string)
    sudo                 = optional(bool, false) # privileged commands through sudo -n (user not root)
  })

  validation {
    condition     = length([for h in var.settings.hosts : h if !h.retired]) >= 1 && alltrue([for name, h in var.settings.hosts : can(regex("^[a-z0-9]([a-z0-9-]{0,18}[a-z0-9])?$", name))])
    error_message = "settings.hosts must name at least one LB host that is not retired, each by 1-20 lowercase letters, digits or '-'."
  }
  validation {
    condition     = alltrue([for h in var.settings.hosts : can(regex("^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$", h.address))])
    error_message = "settings.hosts: every host's address must be an IPv4 address (it is also the VRRP unicast source)."
  }
  validation {
    condition     = alltrue([for h in var.settings.hosts : h.ssh_port >= 1 && h.ssh_port <= 65535 && floor(h.ssh_port) == h.ssh_port])
    error_message = "settings.hosts: every host's ssh_port must be from 1 to 65535."
  }
  validation {
    condition     = alltrue([for h in var.settings.hosts : h.host_key != null]) || var.settings.known_hosts_file != null
    error_message = "settings.hosts: every host needs host_key (its public key, e.g. \"ssh-ed25519 AAAA...\"), or set settings.known_hosts_file: host keys are always verified."
  }
  validation {
    condition     = alltrue([for h in var.settings.hosts : h.priority == null || try(h.priority >= 1 && h.priority <= 254, false)])
    error_message = "settings.hosts: a host's priority must be from 1 to 254."
  }
  validation {
    condition     = (var.settings.ssh_agent_socket == null) != (var.settings.ssh_private_key_file == null)
    error_message = "Set exactly one of settings.ssh_agent_socket and settings.ssh_private_key_file (a path: the key itself is never a setting)."
  }
  validation {
    condition     = can(regex("^([0-9]{1,3}\\.){3}[0-9]{1,3}/([8-9]|[12][0-9]|30)$", var.settings.vip_pool)) && can(cidrhost(var.settings.vip_pool, 1))
    error_message = "settings.vip_pool must be an IPv4 CIDR with a prefix length from 8 to 30."
  }
  validation {
    condition     = var.settings.vip_pool6 == null || can(regex("^[0-9a-f:]+::?[0-9a-f:]*/([4-9][0-9]|1[01][0-9]|12[0-6])$", coalesce(var.settings.vip_pool6, "-"))) && try(cidrsubnet(var.settings.vip_pool6, 0, 0) == var.settings.vip_pool6, false)
    error_message = "settings.vip_pool6 must be an IPv6 network CIDR in canonical form with a prefix length from 40 to 126, such as fd00:5::/112."
  }
  validation {
    condition     = alltrue([for h in var.settings.hosts : h.address6 == null || can(regex("^[0-9a-f:]+$", coalesce(h.address6, "-"))) && try(cidrhost("${h.address6}/128", 0) == h.address6, false)])
    error_message = "settings.hosts: a host's address6 must be an IPv6 address in canonical form (lowercase, shortest), such as fd00::11."
  }
  validation {
    condition     = can(regex("^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$", var.settings.vrrp_interface))
    error_message = "settings.vrrp_interface must be an interface name (e.g. eth0)."
  }
  validation {
    condition     = can(regex("^[0-9]{1,3}-[0-9]{1,3}$", var.settings.virtual_router_ids)) && try(tonumber(split("-", var.settings.virtual_router_ids)[0]) >= 1 && tonumber(split("-", var.settings.virtual_router_ids)[0]) <= tonumber(split("-", var.settings.virtual_router_ids)[1]) && tonumber(split("-", var.settings.virtual_router_ids)[1]) <= 255, false)
    error_message = "settings.virtual_router_ids must be <first>-<last> with 1 <= first <= last <= 255, e.g. 50-99."
  }
  validation {
    condition     = var.settings.advert_int >= 1 && var.settings.advert_int <= 255 && floor(var.settings.advert_int) == var.settings.advert_int
    error_message = "settings.advert_int must be whole seconds from 1 to 255."
  }
}
