terraform {
  required_version = ">= 1.8.0"
  required_providers {
    hcloud = {
      source  = "hetznercloud/hcloud"
      version = ">= 1.50.0, < 2.0.0"
    }
  }
}

# Credentials: HCLOUD_TOKEN in the environment (terraform.env).
provider "hcloud" {}
