output "ingress" {
  description = "The Service's load balancer status: its VIP, once every host that answers has loaded its rules. The hosts SNAT to the VIP, so the nodes see the load balancer, not the client: ip_mode is Proxy (kube-proxy then sends in-cluster clients through the hosts too, and never claims the VIP the nodes' replies go to)."
  value = [{
    ip       = length(local.serving) > 0 ? lbhost_l4_frontend.lb[sort(keys(local.serving))[0]].address : null
    ip_mode  = "Proxy"
    hostname = null
  }]
}
