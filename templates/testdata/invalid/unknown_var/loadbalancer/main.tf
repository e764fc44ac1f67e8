variable "cluster_name" {
  type = string
}

variable "flavor" {
  type = string
}

output "ingress" {
  value = []
}
