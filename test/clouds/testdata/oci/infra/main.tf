# A small OCI cluster's infrastructure: a VCN, a subnet and three instances.
terraform {
  required_providers {
    oci = {
      source  = "oracle/oci"
      version = ">= 6.0.0"
    }
  }
}

locals {
  compartment = "ocid1.compartment.oc1..aaaaaaaaexample"
}

resource "oci_core_vcn" "cluster" {
  compartment_id = local.compartment
  cidr_blocks    = ["10.0.0.0/16"]
  display_name   = "k8s"
}

resource "oci_core_subnet" "nodes" {
  compartment_id = local.compartment
  vcn_id         = oci_core_vcn.cluster.id
  cidr_block     = "10.0.10.0/24"
  display_name   = "nodes"
}

resource "oci_core_instance" "node" {
  for_each = toset(["node-a", "node-b", "node-c"])

  compartment_id      = local.compartment
  availability_domain = "Uocm:EU-FRANKFURT-1-AD-1"
  display_name        = each.key
  shape               = "VM.Standard.E4.Flex"

  shape_config {
    ocpus         = 1
    memory_in_gbs = 8
  }

  source_details {
    source_type = "image"
    source_id   = "ocid1.image.oc1.eu-frankfurt-1.aaaaaaaaexample"
  }

  create_vnic_details {
    subnet_id              = oci_core_subnet.nodes.id
    assign_public_ip       = true
    skip_source_dest_check = true
  }
}
