# Instances of Hetzner Cloud: hcloud_server resources in the infrastructure
# state, mapped the way the hcloud cloud-controller-manager reports them, so
# Nodes registered under it keep their providerID (hcloud://<server id>).
#
#   zone   = the server's datacenter (e.g. fsn1-dc14)
#   region = the server's location   (e.g. fsn1)
# The format is documented in instances/mapping (package doc).

instance "server" {
  match = resource.mode == "managed" && resource.type == "hcloud_server"

  name          = resource.values.name
  provider_id   = "hcloud://${resource.values.id}"
  instance_type = resource.values.server_type
  zone          = resource.values.datacenter
  region        = resource.values.location

  addresses = [
    for a in concat(
      try([for n in resource.values.network : { type = "InternalIP", address = n.ip }], []),
      [
        { type = "ExternalIP", address = try(resource.values.ipv4_address, null) },
        { type = "ExternalIP", address = try(resource.values.ipv6_address, null) },
        { type = "Hostname", address = resource.values.name },
      ],
    ) : a if a.address != null && a.address != ""
  ]

  shutdown = try(resource.values.status == "off", false)
}
