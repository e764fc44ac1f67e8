terraform {
  required_version = ">= 1.8.0"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.0.0, < 8.0.0"
    }
  }
}

# Credentials: GOOGLE_CREDENTIALS (or application default credentials) and
# GOOGLE_PROJECT in the environment (terraform.env).
provider "google" {}
