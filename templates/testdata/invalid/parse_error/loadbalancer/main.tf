variable "cluster_name" {
  type = string

output "ingress" {
  value = []
}
