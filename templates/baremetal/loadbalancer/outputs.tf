output "ingress" {
  description = "The Service's load balancer status: its VIP, once every host's frontend serves it."
  value = [{
    ip       = lbhost_frontend.lb[local.first].address
    ip_mode  = "VIP"
    hostname = null
  }]
}
