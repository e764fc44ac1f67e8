output "ingress" {
  description = "The Service's load balancer status: the NLB's public IPv4 address. The NLB forwards packets (clients' addresses preserved), so ip_mode is VIP."
  value = [{
    ip       = exoscale_nlb.this.ip_address
    hostname = null
    ip_mode  = "VIP"
  }]
}
