output "ingress" {
  value = []
}

variable "nodes" {
  type = list(object({ name = number }))
}
