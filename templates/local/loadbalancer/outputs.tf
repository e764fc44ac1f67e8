output "ingress" {
  description = "The Service's load balancer status: its VIP, once the frontend serves it."
  value = [{
    ip       = lbhost_frontend.lb.address
    ip_mode  = "VIP"
    hostname = null
  }]
}
