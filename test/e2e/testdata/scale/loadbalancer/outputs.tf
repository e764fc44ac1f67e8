output "ingress" {
  value = [{
    ip       = terraform_data.frontend.output.address
    ip_mode  = "VIP"
    hostname = null
  }]
}
