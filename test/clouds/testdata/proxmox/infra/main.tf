# A small Proxmox VE cluster's VMs (bpg/proxmox): three nodes on two hosts,
# one stopped, one with a zone tag; and a template, which is no instance.
terraform {
  required_providers {
    proxmox = {
      source  = "bpg/proxmox"
      version = ">= 0.60.0"
    }
  }
}

resource "proxmox_virtual_environment_vm" "node" {
  for_each = {
    "node-a" = { id = 101, host = "pve1", tags = ["k8s", "region-cluster-1"] }
    "node-b" = { id = 102, host = "pve2", tags = ["k8s", "region-cluster-1", "zone-rack-2"] }
    "node-c" = { id = 103, host = "pve2", tags = ["k8s", "region-cluster-1"] }
  }

  name      = each.key
  vm_id     = each.value.id
  node_name = each.value.host
  tags      = each.value.tags
  started   = each.key != "node-c"

  cpu {
    cores   = 2
    sockets = 2
  }
  memory {
    dedicated = 8192
  }
}

resource "proxmox_virtual_environment_vm" "template" {
  name      = "ubuntu-template"
  vm_id     = 9000
  node_name = "pve1"
  template  = true
}
