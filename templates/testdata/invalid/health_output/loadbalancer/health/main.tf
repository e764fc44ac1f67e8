output "healthy" {
  value = []
}
