variable "cluster_name" {
  type = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,62}$", var.cluster_name))
    error_message = "cluster_name must be 1-63 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "routes" {
  type = map(object({
    destination_cidr      = string
    target_node           = string
    target_node_addresses = list(object({ type = string, address = string }))
    blackhole             = bool
  }))

  validation {
    condition = alltrue([for r in var.routes :
      can(cidrhost(r.destination_cidr, 0)) && can(regex("^[0-9a-fA-F.:]+/[0-9]{1,3}$", r.destination_cidr))
    ])
    error_message = "Every route's destination_cidr must be a CIDR such as 10.244.1.0/24 or fd00:10:244:1::/64."
  }
}

variable "settings" {
  description = "From the cloud config's routes.settings: the router host and the SSH key source (see the set's README.md)."
  type = object({
    router = object({
      address  = string
      ssh_port = optional(number, 22)
      user     = optional(string, "root")
      sudo     = optional(bool, false) # privileged commands through sudo -n (user not root)
      host_key = optional(string)
    })
    known_hosts_file     = optional(string)
    ssh_agent_socket     = optional(string)
    ssh_private_key_file = optional(string)
  })

  validation {
    condition     = can(regex("^[A-Za-z0-9]([A-Za-z0-9.:-]{0,252}[A-Za-z0-9])?$", var.settings.router.address))
    error_message = "settings.router.address must be a host name or an IP address."
  }
  validation {
    condition     = var.settings.router.host_key != null || var.settings.known_hosts_file != null
    error_message = "settings.router needs host_key (its public key, e.g. \"ssh-ed25519 AAAA...\"), or set settings.known_hosts_file: host keys are always verified."
  }
  validation {
    condition     = (var.settings.ssh_agent_socket == null) != (var.settings.ssh_private_key_file == null)
    error_message = "Set exactly one of settings.ssh_agent_socket and settings.ssh_private_key_file (a path: the key itself is never a setting)."
  }
}
