variable "cluster_name" {
  type = string
}

variable "credentials" {
  type      = map(string)
  ephemeral = true
}

output "ingress" {
  value = []
}
