output "routes" {
  description = "The routes that exist, by name."
  value       = { for name, r in terraform_data.route : name => r.output }
}
