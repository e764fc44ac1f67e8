terraform {
  required_version = ">= 1.8.0"
  required_providers {
    oci = {
      source  = "oracle/oci"
      version = ">= 6.0.0, < 9.0.0"
    }
  }
}

# Credentials come from the environment (the cloud config's terraform.env):
# TF_VAR_* is refused by tfccm, so use the provider's own variables, e.g.
# OCI_CLI_AUTH=instance_principal, or OCI_TENANCY_OCID, OCI_USER_OCID,
# OCI_FINGERPRINT, OCI_PRIVATE_KEY (or OCI_PRIVATE_KEY_PATH) and OCI_REGION.
provider "oci" {}
