terraform {
  required_version = ">= 1.8.0"
  required_providers {
    hcloud = {
      source  = "hetznercloud/hcloud"
      version = ">= 1.50.0, < 2.0.0"
    }
  }
}

# Credentials: HCLOUD_TOKEN in the environment (the cloud config's
# terraform.env); nothing secret is ever written into the workspace.
provider "hcloud" {}
