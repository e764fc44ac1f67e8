# The configured credentials (the cloud config's terraform.env and pass_env)
# this module's tofu and providers receive; no other reaches its workspaces
# (templates/CONTRACT.md, docs/credentials.md).
env = [
  "OS_CLOUD",
  "OS_CLIENT_CONFIG_FILE",
  "OS_AUTH_URL",
  "OS_REGION_NAME",
  "OS_INTERFACE",
  "OS_APPLICATION_CREDENTIAL_ID",
  "OS_APPLICATION_CREDENTIAL_NAME",
  "OS_APPLICATION_CREDENTIAL_SECRET",
  "OS_USERNAME",
  "OS_USER_ID",
  "OS_PASSWORD",
  "OS_PROJECT_ID",
  "OS_PROJECT_NAME",
  "OS_USER_DOMAIN_NAME",
  "OS_PROJECT_DOMAIN_NAME",
  "OS_DOMAIN_NAME",
  "OS_CACERT",
]
