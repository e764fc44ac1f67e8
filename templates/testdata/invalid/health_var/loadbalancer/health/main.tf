variable "nodes" {
  type = list(object({ name = number }))
}

output "backends" {
  value = []
}
