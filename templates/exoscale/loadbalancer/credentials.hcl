# The configured credentials (the cloud config's terraform.env and pass_env)
# this module's tofu and providers receive; no other reaches its workspaces
# (templates/CONTRACT.md, docs/credentials.md).
env = [
  "EXOSCALE_API_KEY",
  "EXOSCALE_API_SECRET",
]
