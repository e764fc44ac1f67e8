output "nodes" {
  description = "Instances by name, as in templates/CONTRACT.md."
  value       = { for name, n in terraform_data.node : name => n.output }
}

output "cloud_netns" {
  description = "The netns that routes and hosts HAProxy."
  value       = terraform_data.cloud.output.CLOUD_NETNS
}

output "state_dir" {
  description = "HAProxy base config, fragments/, claims/, pid file and sockets."
  value       = terraform_data.haproxy.output.STATE_DIR
}

output "haproxy_master_socket" {
  description = "HAProxy master CLI socket (reload, show proc)."
  value       = "${terraform_data.haproxy.output.STATE_DIR}/master.sock"
}

output "haproxy_stats_socket" {
  description = "HAProxy runtime API socket (show stat, show servers state)."
  value       = "${terraform_data.haproxy.output.STATE_DIR}/haproxy.sock"
}

output "vip_pool" {
  description = "The pool load balancer VIPs come from."
  value       = terraform_data.cloud.output.VIP_POOL
}

output "vip_pool6" {
  description = "The pool IPv6 load balancer VIPs come from (on the cloud netns' loopback, like the IPv4 ones)."
  value       = var.vip_pool6
}

output "host_address" {
  description = "The host's address on the host<->cloud link: the source of connections from the host to a VIP."
  value       = terraform_data.cloud.output.HOST_ADDR
}

output "cloud_address" {
  description = "The cloud netns address on the host<->cloud link (the host's next hop to the VIP pool)."
  value       = terraform_data.cloud.output.CLOUD_ADDR
}

output "routed_vips" {
  description = "Whether the cloud runs the routed-VIP service (lbhost-router) that the local set's `routed` variant needs."
  value       = length(terraform_data.router) > 0
}
