# Instances of DigitalOcean: digitalocean_droplet resources in the
# infrastructure state, mapped the way the DigitalOcean
# cloud-controller-manager reports them, so Nodes registered under it keep
# their providerID (digitalocean://<droplet id>).
#
#   zone = region = the Droplet's region slug (e.g. fra1): DigitalOcean
#   regions have no zones.
# The format is documented in instances/mapping (package doc).

instance "droplet" {
  match = resource.mode == "managed" && resource.type == "digitalocean_droplet"

  name          = resource.values.name
  provider_id   = "digitalocean://${resource.values.id}"
  instance_type = resource.values.size
  zone          = resource.values.region
  region        = resource.values.region

  addresses = [
    for a in [
      { type = "InternalIP", address = try(resource.values.ipv4_address_private, null) },
      { type = "ExternalIP", address = try(resource.values.ipv4_address, null) },
      { type = "ExternalIP", address = try(resource.values.ipv6_address, null) },
      { type = "Hostname", address = resource.values.name },
    ] : a if a.address != null && a.address != ""
  ]

  shutdown = try(resource.values.status == "off", false)
}
