# A small OpenStack cluster's infrastructure: a network, a subnet and three
# servers, one of them shut off.
terraform {
  required_providers {
    openstack = {
      source  = "terraform-provider-openstack/openstack"
      version = ">= 3.0.0"
    }
  }
}

resource "openstack_networking_network_v2" "nodes" {
  name = "k8s-nodes"
}

resource "openstack_networking_subnet_v2" "nodes" {
  network_id = openstack_networking_network_v2.nodes.id
  cidr       = "10.0.10.0/24"
}

resource "openstack_compute_instance_v2" "node" {
  for_each = { "node-a" = "10.0.10.2", "node-b" = "10.0.10.3", "node-c" = "10.0.10.4" }

  name              = each.key
  flavor_name       = "m1.large"
  image_name        = "ubuntu-24.04"
  availability_zone = "nova"
  power_state       = each.key == "node-c" ? "shutoff" : "active"

  network {
    uuid        = openstack_networking_network_v2.nodes.id
    fixed_ip_v4 = each.value
  }
}
