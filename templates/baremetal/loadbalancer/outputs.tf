output "ingress" {
  description = "The Service's load balancer status: one VIP per IP family served (primary first), once every host that answers serves it. HAProxy proxies connections: with the PROXY protocol the nodes must see them come through it (kube-proxy must not short-cut in-cluster clients to the pods), so ip_mode is Proxy then, else VIP."
  value = [for f in local.served : {
    # Not waiting on any one host's frontend: a host that is down has its
    # frontend pending, and the others serve.
    ip       = length(local.vips[f].hosts) > 0 ? lbhost_frontend.lb["${local.vips[f].hosts[0]}${local.vips[f].suffix}"].address : null
    ip_mode  = var.service.proxy_protocol ? "Proxy" : "VIP"
    hostname = null
  }]

  # Checked at plan, before anything changes.
  precondition {
    condition     = length(local.served) > 0
    error_message = "The Service's ipFamilies are ${join(", ", var.service.ip_families)}, and settings.vip_pool6 is not set: set it (an IPv6 CIDR on the hosts' VRRP network) for IPv6 VIPs."
  }
  precondition {
    condition     = var.service.ip_family_policy != "RequireDualStack" || length(local.served) == length(var.service.ip_families)
    error_message = "The Service requires dual-stack (ipFamilyPolicy RequireDualStack), and settings.vip_pool6 is not set: set it for IPv6 VIPs, or use PreferDualStack to get an IPv4 VIP only."
  }
  precondition {
    condition     = alltrue([for f in keys(local.requested) : contains(local.served, f)])
    error_message = "An IPv6 load balancer IP was requested, and settings.vip_pool6 is not set: set it (an IPv6 CIDR on the hosts' VRRP network)."
  }
}
