output "ingress" {
  description = "The Service's load balancer status: the forwarding rules' address. Passthrough load balancers deliver packets to the nodes unchanged, so ip_mode is VIP."
  value = [{
    ip       = values(google_compute_forwarding_rule.protocol)[0].ip_address
    hostname = null
    ip_mode  = "VIP"
  }]
}
