# A variant that uses only part of the contract.
variable "load_balancer_name" {
  type = string
}

variable "service" {
  type = object({
    name     = string
    internal = bool
    ports    = list(object({ port = number, node_port = number }))
  })
}

variable "settings" {
  type = object({
    subnet = optional(string, "private")
  })
}

output "ingress" {
  value = [{ hostname = "${var.load_balancer_name}.internal.example" }]
}
