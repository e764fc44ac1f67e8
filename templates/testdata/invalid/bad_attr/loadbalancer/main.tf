variable "service" {
  type = object({
    name = string
    color = string
  })
}

output "ingress" {
  value = []
}
