variable "settings" {
  description = "From the cloud config's load_balancer.settings (docs/bgp.md, node mode)."
  type = object({
    # tfccm's namespace: the NodeBGP object lives there, the node agents watch it.
    namespace = string
    bgp = object({
      # The nodes' AS.
      asn = number
      peers = list(object({
        name            = string
        address         = string
        asn             = number
        port            = optional(number)
        keepalive_time  = optional(number)
        hold_time       = optional(number)
        password_secret = optional(object({ name = string, key = string }))
        # Refused: a password is never a setting (see password_secret).
        password      = optional(string)
        bfd_profile   = optional(string)
        ibgp          = optional(bool)
        node_selector = optional(map(string))
      }))
      bfd_profiles = optional(list(object({
        name                 = string
        receive_interval_ms  = optional(number)
        transmit_interval_ms = optional(number)
        detect_multiplier    = optional(number)
      })), [])
      pools = list(object({
        name             = string
        prefixes         = list(string)
        communities      = optional(list(string))
        local_preference = optional(number)
      }))
      # The networks of the nodes' interfaces: a peer outside all of them is refused at plan.
      node_networks = optional(list(string))
      # How long apply waits for a node's FRR to hold the peering.
      wait_timeout = optional(string, "60s")
    })
  })

  validation {
    condition     = alltrue([for p in var.settings.bgp.peers : p.password == null])
    error_message = "settings.bgp.peers[*].password: a BGP password is never a setting: put it in a Secret of tfccm's namespace and name it with password_secret = { name, key } (the chart's nodeAgent.bgp.passwordSecrets lets the agents read it)."
  }
  validation {
    condition     = can(regex("^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$", var.settings.namespace))
    error_message = "settings.namespace must be a namespace name (tfccm's, where the chart installed the node agents)."
  }
}
