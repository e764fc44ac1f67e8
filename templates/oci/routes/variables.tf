variable "cluster_name" {
  type = string
}

variable "routes" {
  type = map(object({
    destination_cidr      = string
    target_node           = string
    target_node_addresses = list(object({ type = string, address = string }))
    blackhole             = bool
  }))

  validation {
    condition     = alltrue([for r in var.routes : !r.blackhole])
    error_message = "OCI route rules need a target (network entity); blackhole routes are not possible."
  }
  validation {
    condition     = alltrue([for r in var.routes : !strcontains(r.destination_cidr, ":")])
    error_message = "IPv6 pod CIDRs cannot be routed to a node's private IP by this set (OCI route rules to private IPs are IPv4 here): ${join(", ", [for r in var.routes : r.destination_cidr if strcontains(r.destination_cidr, ":")])}."
  }
}

variable "settings" {
  description = "routes.settings of the cloud config (see README.md)."
  type = object({
    compartment_id = string
    vcn_id         = string
    subnet_id      = string
    # Rules the nodes' subnet needs besides pod routes (internet/NAT/service
    # gateway): this set's route table replaces the subnet's.
    base_rules = optional(list(object({
      destination       = string
      destination_type  = optional(string, "CIDR_BLOCK")
      network_entity_id = string
      description       = optional(string)
    })), [])
  })

  validation {
    condition     = startswith(var.settings.vcn_id, "ocid1.vcn.") && startswith(var.settings.subnet_id, "ocid1.subnet.") && startswith(var.settings.compartment_id, "ocid1.")
    error_message = "settings.compartment_id, vcn_id and subnet_id must be OCIDs."
  }
}
