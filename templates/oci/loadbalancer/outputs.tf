output "ingress" {
  description = "The Service's load balancer status: the network load balancer's addresses of the Service's IP families. ip_mode is VIP (passthrough) unless PROXY protocol is on."
  value = (
    var.settings.hostname != null ? [{ ip = null, hostname = var.settings.hostname, ip_mode = local.ip_mode }] :
    [
      for a in oci_network_load_balancer_network_load_balancer.this.ip_addresses : { ip = a.ip_address, hostname = null, ip_mode = local.ip_mode }
      if contains(local.families, a.ip_version)
    ]
  )
}
