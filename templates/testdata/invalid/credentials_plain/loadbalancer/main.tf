variable "cluster_name" {
  type = string
}

variable "credentials" {
  type      = map(string)
  sensitive = true
}

output "ingress" {
  value = []
}
