output "ingress" {
  description = "The Service's load balancer status: the floating IP (public) or the VIP (internal, IPv6). Octavia proxies connections; with the PROXY protocol the nodes must see them come through the load balancer, so ip_mode is Proxy then, else VIP (as cloud-provider-openstack reports)."
  value = [{
    ip       = local.floating ? openstack_networking_floatingip_associate_v2.this[0].floating_ip : openstack_lb_loadbalancer_v2.this.vip_address
    hostname = null
    ip_mode  = var.service.proxy_protocol ? "Proxy" : "VIP"
  }]
}
