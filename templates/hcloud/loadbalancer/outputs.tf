output "ingress" {
  description = "The Service's load balancer status. Hetzner Cloud load balancers proxy TCP connections, so ip_mode is Proxy."
  value = (
    var.settings.hostname != null ? [{ ip = null, hostname = var.settings.hostname, ip_mode = "Proxy" }] :
    var.service.internal ? [{ ip = hcloud_load_balancer_network.this[0].ip, hostname = null, ip_mode = "Proxy" }] :
    concat(
      local.ipv4 ? [{ ip = hcloud_load_balancer.this.ipv4, hostname = null, ip_mode = "Proxy" }] : [],
      local.ipv6 ? [{ ip = hcloud_load_balancer.this.ipv6, hostname = null, ip_mode = "Proxy" }] : [],
    )
  )
}
