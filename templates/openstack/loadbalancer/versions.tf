terraform {
  required_version = ">= 1.8.0"
  required_providers {
    openstack = {
      source  = "terraform-provider-openstack/openstack"
      version = ">= 3.0.0, < 4.0.0"
    }
  }
}

# Credentials: OS_CLOUD (with a clouds.yaml) or OS_AUTH_URL,
# OS_APPLICATION_CREDENTIAL_ID/SECRET, OS_REGION_NAME... in the environment
# (the cloud config's terraform.env); nothing secret is ever written into the
# workspace.
provider "openstack" {}
