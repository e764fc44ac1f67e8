output "ingress" {
  description = "The Service's load balancer status: its VIP, once the cloud's router has loaded its rules. Packets are forwarded (DNAT), not proxied, so ip_mode is VIP: in-cluster clients reaching the pods directly see what outside clients see."
  value = [{
    ip       = lbhost_l4_frontend.lb.address
    ip_mode  = "VIP"
    hostname = null
  }]
}
