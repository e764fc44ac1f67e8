# The configured credentials (the cloud config's terraform.env and pass_env)
# this module's tofu and providers receive; no other reaches its workspaces
# (templates/CONTRACT.md, docs/credentials.md).
env = [
  "GOOGLE_CREDENTIALS",
  "GOOGLE_APPLICATION_CREDENTIALS",
  "GOOGLE_OAUTH_ACCESS_TOKEN",
  "GOOGLE_IMPERSONATE_SERVICE_ACCOUNT",
  "GOOGLE_PROJECT",
  "GOOGLE_REGION",
  "GOOGLE_ZONE",
]
