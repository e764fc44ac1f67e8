locals {
  state_dir   = coalesce(var.state_dir, "/run/${var.prefix}")
  cloud_netns = "${var.prefix}-cloud"

  cloud = {
    CLOUD_NETNS  = local.cloud_netns
    BRIDGE       = "${var.prefix}-br"
    BRIDGE_ADDR  = "10.250.0.1/24"
    BRIDGE_ADDR6 = "fd00:250::1/64"
    HOST_LINK    = "${var.prefix}-h"
    CLOUD_LINK   = "${var.prefix}-c"
    HOST_ADDR    = cidrhost(var.transit_cidr, 1)
    CLOUD_ADDR   = cidrhost(var.transit_cidr, 2)
    VIP_POOL     = var.vip_pool
    STATE_DIR    = local.state_dir
  }
}

# The cloud: a netns that routes between the host and the node network and
# hosts the load balancers.
resource "terraform_data" "cloud" {
  triggers_replace = local.cloud
  input            = local.cloud

  provisioner "local-exec" {
    command     = "bash \"${path.module}/cloud.sh\" up"
    environment = self.input
  }

  provisioner "local-exec" {
    when        = destroy
    command     = "bash \"${path.module}/cloud.sh\" down"
    environment = self.input
  }
}

# The HAProxy master that every load balancer adds a config fragment to.
resource "terraform_data" "haproxy" {
  triggers_replace = terraform_data.cloud.output
  input = {
    CLOUD_NETNS = terraform_data.cloud.output.CLOUD_NETNS
    STATE_DIR   = terraform_data.cloud.output.STATE_DIR
  }

  provisioner "local-exec" {
    command     = "bash \"${path.module}/haproxy.sh\" start"
    environment = self.input
  }

  provisioner "local-exec" {
    when        = destroy
    command     = "bash \"${path.module}/haproxy.sh\" stop"
    environment = self.input
  }
}

# One node per entry of var.nodes: a netns with a veth on the cloud bridge.
# input (and so output) is the instance object of templates/CONTRACT.md.
resource "terraform_data" "node" {
  for_each = var.nodes

  triggers_replace = {
    CLOUD_NETNS = terraform_data.cloud.output.CLOUD_NETNS
    BRIDGE      = terraform_data.cloud.output.BRIDGE
    NETNS       = "${var.prefix}-n-${each.key}"
    VETH        = "${var.prefix}-v${each.value.index}"
    ADDR        = "10.250.0.${each.value.index}/24"
    ADDR6       = each.value.ipv6 ? "fd00:250::${each.value.index}/64" : ""
    GATEWAY     = "10.250.0.1"
    GATEWAY6    = "fd00:250::1"
  }

  input = {
    kind          = "instance"
    name          = each.key
    netns         = "${var.prefix}-n-${each.key}"
    address       = "10.250.0.${each.value.index}"
    address_v6    = each.value.ipv6 ? "fd00:250::${each.value.index}" : null
    zone          = each.value.zone
    region        = each.value.region
    instance_type = each.value.instance_type
    running       = true
  }

  provisioner "local-exec" {
    command     = "bash \"${path.module}/node.sh\" up"
    environment = self.triggers_replace
  }

  provisioner "local-exec" {
    when        = destroy
    command     = "bash \"${path.module}/node.sh\" down"
    environment = self.triggers_replace
  }
}

# The routed-VIP service (lbhost-router) that lbhost_routed_vip load
# balancers rely on; only when var.router_binary is set.
resource "terraform_data" "router" {
  count            = var.router_binary == null ? 0 : 1
  triggers_replace = [terraform_data.cloud.output, var.router_binary]
  input = {
    CLOUD_NETNS   = terraform_data.cloud.output.CLOUD_NETNS
    STATE_DIR     = terraform_data.cloud.output.STATE_DIR
    ROUTER_BINARY = var.router_binary
  }

  provisioner "local-exec" {
    command     = "bash \"${path.module}/router.sh\" start"
    environment = self.input
  }

  provisioner "local-exec" {
    when        = destroy
    command     = "bash \"${path.module}/router.sh\" stop"
    environment = self.input
  }
}
