output "ingress" {
  value = []
}
