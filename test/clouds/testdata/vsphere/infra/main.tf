# A small vSphere cluster's VMs: three nodes, one powered off.
terraform {
  required_providers {
    vsphere = {
      source  = "vmware/vsphere"
      version = ">= 2.0.0"
    }
  }
}

resource "vsphere_virtual_machine" "node" {
  for_each = { "node-a" = "zone-a", "node-b" = "zone-b", "node-c" = "zone-b" }

  name             = each.key
  resource_pool_id = "resgroup-42"
  num_cpus         = 4
  memory           = 16384
  guest_id         = "ubuntu64Guest"
  extra_config = {
    "guestinfo.k8s.zone"   = each.value
    "guestinfo.k8s.region" = "eu-dc1"
  }

  network_interface {
    network_id = "network-17"
  }
}

# The provider's schema requires these (the real provider also reads
# VSPHERE_USER/VSPHERE_PASSWORD); the stand-in ignores them.
provider "vsphere" {
  user           = "administrator@vsphere.local"
  password       = "stand-in"
  vsphere_server = "vcenter.example"
}
