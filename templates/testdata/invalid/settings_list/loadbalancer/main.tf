variable "settings" {
  type = list(string)
}

output "ingress" {
  value = []
}
