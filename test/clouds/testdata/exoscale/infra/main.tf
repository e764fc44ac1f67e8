# A small Exoscale cluster's infrastructure: a private network, two
# instances attached to it and one (stopped) with a public address only.
terraform {
  required_providers {
    exoscale = {
      source  = "exoscale/exoscale"
      version = ">= 0.60.0"
    }
  }
}

resource "exoscale_private_network" "nodes" {
  zone     = "ch-gva-2"
  name     = "k8s-nodes"
  netmask  = "255.255.255.0"
  start_ip = "10.0.10.2"
  end_ip   = "10.0.10.250"
}

resource "exoscale_compute_instance" "node" {
  for_each = { "node-a" = "10.0.10.2", "node-b" = "10.0.10.3", "node-c" = null }

  zone        = "ch-gva-2"
  name        = each.key
  type        = "standard.medium"
  template_id = "0f9d5c3a-1234-4abc-8def-0123456789ab"
  disk_size   = 50
  state       = each.key == "node-c" ? "stopped" : "running"

  dynamic "network_interface" {
    for_each = each.value == null ? [] : [each.value]
    content {
      network_id = exoscale_private_network.nodes.id
      ip_address = network_interface.value
    }
  }
}
