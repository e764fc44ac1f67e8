output "routes" {
  value = { for name, r in terraform_data.route : name => r.output }
}
