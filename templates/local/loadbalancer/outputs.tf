output "ingress" {
  description = "The Service's load balancer status: its VIP."
  value = [{
    ip       = terraform_data.frontend.output.VIP
    ip_mode  = "VIP"
    hostname = null
  }]
}
