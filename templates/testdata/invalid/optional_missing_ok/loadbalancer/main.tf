# Valid: an optional attribute the engine does not provide is fine.
variable "service" {
  type = object({
    name  = string
    color = optional(string, "blue")
  })
}

variable "health_check" {
  type = any
}

variable "extra" {
  type    = number
  default = 3
}

output "ingress" {
  value = []
}
