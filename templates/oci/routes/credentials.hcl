# The configured credentials (the cloud config's terraform.env and pass_env)
# this module's tofu and providers receive; no other reaches its workspaces
# (templates/CONTRACT.md, docs/credentials.md).
env = [
  "OCI_CLI_AUTH",
  "OCI_TENANCY_OCID",
  "OCI_USER_OCID",
  "OCI_FINGERPRINT",
  "OCI_PRIVATE_KEY",
  "OCI_PRIVATE_KEY_PATH",
  "OCI_PRIVATE_KEY_PASSWORD",
  "OCI_REGION",
]
