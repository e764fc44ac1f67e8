# A small Exoscale cluster's infrastructure: a private network and three
# instances attached to it, one of them stopped.
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
  for_each = { "node-a" = "10.0.10.2", "node-b" = "10.0.10.3", "node-c" = "10.0.10.4" }

  zone        = "ch-gva-2"
  name        = each.key
  type        = "standard.medium"
  template_id = "0f9d5c3a-1234-4abc-8def-0123456789ab"
  disk_size   = 50
  state       = each.key == "node-c" ? "stopped" : "running"

  network_interface {
    network_id = exoscale_private_network.nodes.id
    ip_address = each.value
  }
}
