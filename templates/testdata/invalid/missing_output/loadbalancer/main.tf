variable "cluster_name" {
  type = string
}

output "vip" {
  value = "x"
}
