output "ingress" {
  description = "The Service's load balancer status. DigitalOcean regional load balancers proxy connections, so ip_mode is Proxy."
  value = (
    var.settings.hostname != null ? [{ ip = null, hostname = var.settings.hostname, ip_mode = "Proxy" }] :
    concat(
      local.ipv4 || local.internal ? [{ ip = digitalocean_loadbalancer.this.ip, hostname = null, ip_mode = "Proxy" }] : [],
      local.ipv6 && !local.internal ? [{ ip = digitalocean_loadbalancer.this.ipv6, hostname = null, ip_mode = "Proxy" }] : [],
    )
  )
}
