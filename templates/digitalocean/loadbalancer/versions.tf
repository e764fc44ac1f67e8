terraform {
  required_version = ">= 1.8.0"
  required_providers {
    digitalocean = {
      source  = "digitalocean/digitalocean"
      version = ">= 2.60.0, < 3.0.0"
    }
  }
}

# Credentials: DIGITALOCEAN_TOKEN in the environment (the cloud config's
# terraform.env); nothing secret is ever written into the workspace.
provider "digitalocean" {}
