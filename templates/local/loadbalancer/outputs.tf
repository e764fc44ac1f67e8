output "ingress" {
  description = "The Service's load balancer status: its VIP, once the frontend serves it. HAProxy proxies connections: with the PROXY protocol the nodes must see them come through it (kube-proxy must not short-cut in-cluster clients to the pods), so ip_mode is Proxy then, else VIP."
  value = [{
    ip       = lbhost_frontend.lb.address
    ip_mode  = var.service.proxy_protocol ? "Proxy" : "VIP"
    hostname = null
  }]
}
