output "ingress" {
  description = "The Service's load balancer status: its VIP, served by kube-proxy on the nodes (ip_mode VIP)."
  value = [{
    ip       = lbhost_routed_vip.vip.address
    ip_mode  = "VIP"
    hostname = null
  }]
}
