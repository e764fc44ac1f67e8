terraform {
  required_version = ">= 1.8.0"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.0.0, < 8.0.0"
    }
  }
}

# Credentials: GOOGLE_CREDENTIALS (or workload identity / application default
# credentials) and GOOGLE_PROJECT, GOOGLE_REGION in the environment (the
# cloud config's terraform.env); nothing secret is ever written into the
# workspace.
provider "google" {}
