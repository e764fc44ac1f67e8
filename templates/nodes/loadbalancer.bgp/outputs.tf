output "ingress" {
  description = "The Service's load balancer status: one address per family (primary first), announced over BGP by every eligible node; kube-proxy on each serves it (ip_mode VIP)."
  value = [for f in local.families : {
    ip       = lbhost_node_vip.vip[f].address
    ip_mode  = "VIP"
    hostname = null
  }]

  precondition {
    condition     = length(local.families) > 0
    error_message = "Node mode serves addresses from tfccm's address pools, and none was allocated for the Service: declare a pool (load_balancer { address_pool \"NAME\" { ... } } or an AddressPool object) covering the Service's ipFamilies (${join(", ", var.service.ip_families)})."
  }
}

output "announcers" {
  description = "The nodes announcing each family's address when apply returned."
  value       = { for f, v in lbhost_node_vip.vip : f => v.announcers }
}
