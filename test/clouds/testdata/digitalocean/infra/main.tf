# A small DigitalOcean cluster's infrastructure: a VPC and three Droplets in it.
terraform {
  required_providers {
    digitalocean = {
      source  = "digitalocean/digitalocean"
      version = "~> 2.60"
    }
  }
}

resource "digitalocean_vpc" "cluster" {
  name     = "k8s"
  region   = "fra1"
  ip_range = "10.110.0.0/20"
}

resource "digitalocean_droplet" "node" {
  for_each = toset(["node-a", "node-b", "node-c"])

  name     = each.key
  size     = "s-2vcpu-4gb"
  image    = "ubuntu-24-04-x64"
  region   = "fra1"
  vpc_uuid = digitalocean_vpc.cluster.id
  ipv6     = true
}
