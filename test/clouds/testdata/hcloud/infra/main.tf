# A small Hetzner Cloud cluster's infrastructure: a private network and
# three servers attached to it, the way a platform team creates nodes.
terraform {
  required_providers {
    hcloud = {
      source  = "hetznercloud/hcloud"
      version = "~> 1.60"
    }
  }
}

resource "hcloud_network" "cluster" {
  name     = "k8s"
  ip_range = "10.0.0.0/16"
}

resource "hcloud_network_subnet" "nodes" {
  network_id   = hcloud_network.cluster.id
  type         = "cloud"
  network_zone = "eu-central"
  ip_range     = "10.0.1.0/24"
}

resource "hcloud_server" "node" {
  for_each = {
    "node-a" = "10.0.1.1"
    "node-b" = "10.0.1.2"
    "node-c" = "10.0.1.3"
  }

  name        = each.key
  server_type = "cx22"
  image       = "ubuntu-24.04"
  location    = "fsn1"

  public_net {
    ipv4_enabled = true
    ipv6_enabled = true
  }

  network {
    network_id = hcloud_network.cluster.id
    ip         = each.value
  }

  depends_on = [hcloud_network_subnet.nodes]
}
