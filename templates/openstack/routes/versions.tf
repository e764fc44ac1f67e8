terraform {
  required_version = ">= 1.8.0"
  required_providers {
    openstack = {
      source  = "terraform-provider-openstack/openstack"
      version = ">= 3.0.0, < 4.0.0"
    }
  }
}

# Credentials: OS_CLOUD or OS_AUTH_URL and friends in the environment
# (terraform.env).
provider "openstack" {}
