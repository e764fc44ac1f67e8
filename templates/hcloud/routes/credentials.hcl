# The configured credentials (the cloud config's terraform.env and pass_env)
# this module's tofu and providers receive; no other reaches its workspaces
# (templates/CONTRACT.md, docs/credentials.md).
env = [
  "HCLOUD_TOKEN",
  "HCLOUD_ENDPOINT",
]
