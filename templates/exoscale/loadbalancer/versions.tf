terraform {
  required_version = ">= 1.8.0"
  required_providers {
    exoscale = {
      source  = "exoscale/exoscale"
      version = ">= 0.60.0, < 1.0.0"
    }
  }
}

# Credentials: EXOSCALE_API_KEY and EXOSCALE_API_SECRET in the environment
# (the cloud config's terraform.env); nothing secret is ever written into the
# workspace.
provider "exoscale" {}
