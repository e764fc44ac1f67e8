variable "load_balancer_id" {
  type = string
}

variable "service" {
  type = object({
    ports = list(object({
      name      = string
      protocol  = string
      port      = number
      node_port = number
    }))
    load_balancer_ips = optional(list(string), []) # tfccm's allocation from the bench's address pool
  })
}

variable "nodes" {
  type = list(object({
    name      = string
    addresses = list(object({ type = string, address = string }))
  }))
}
