# Instances of the local cloud (examples/local/infra).
#
# Each node of the local cloud is a terraform_data.node["<name>"] resource
# whose output is
#   { kind = "instance", name, netns, address, address_v6, zone, region,
#     instance_type, running }
# (see templates/CONTRACT.md). This file maps those resources to Kubernetes
# instances; the format is documented in instances/mapping (package doc).

instance "node" {
  match = (
    resource.mode == "managed" &&
    resource.type == "terraform_data" &&
    resource.name == "node" &&
    try(resource.values.output.kind == "instance", false)
  )

  name          = resource.values.output.name
  provider_id   = "terraform://local/${resource.values.output.name}"
  instance_type = resource.values.output.instance_type
  zone          = resource.values.output.zone
  region        = resource.values.output.region

  addresses = [
    { type = "InternalIP", address = resource.values.output.address },
    { type = "InternalIP", address = try(resource.values.output.address_v6, null) },
    { type = "Hostname", address = resource.values.output.name },
  ]

  labels = {
    "tfccm.io/netns" = resource.values.output.netns
  }

  shutdown = !resource.values.output.running
}
