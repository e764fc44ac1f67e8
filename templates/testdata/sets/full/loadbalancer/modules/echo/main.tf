variable "value" {
  type = any
}

output "value" {
  value = var.value
}
