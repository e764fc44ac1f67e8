# The configured credentials (the cloud config's terraform.env and pass_env)
# this module's tofu and providers receive; no other reaches its workspaces
# (templates/CONTRACT.md, docs/credentials.md).
env = [
  "DIGITALOCEAN_TOKEN",
  "DIGITALOCEAN_ACCESS_TOKEN",
  "DIGITALOCEAN_API_URL",
]
