# Instances of OpenStack: openstack_compute_instance_v2 resources in the
# infrastructure state, mapped the way cloud-provider-openstack reports them,
# so Nodes registered under it keep their providerID (openstack:///<server
# id>; the CCM leaves the region out unless configured for several regions).
#
#   instance type = the flavor name
#   zone          = the server's availability zone (e.g. nova)
#   region        = the provider region of the server (e.g. RegionOne)
# The format is documented in instances/mapping (package doc).

instance "server" {
  match = resource.mode == "managed" && resource.type == "openstack_compute_instance_v2"

  name          = resource.values.name
  provider_id   = "openstack:///${resource.values.id}"
  instance_type = resource.values.flavor_name
  zone          = resource.values.availability_zone
  region        = resource.values.region

  addresses = [
    for a in concat(
      flatten([for n in try(resource.values.network, []) : [
        { type = "InternalIP", address = try(n.fixed_ip_v4, null) },
        { type = "InternalIP", address = try(n.fixed_ip_v6, null) },
      ]]),
      [
        # access_ip_v4 defaults to the first fixed IP; only another address
        # (a floating IP the infrastructure set as access IP) is external.
        {
          type    = "ExternalIP",
          address = contains([for n in try(resource.values.network, []) : try(n.fixed_ip_v4, "")], try(resource.values.access_ip_v4, "")) ? null : try(resource.values.access_ip_v4, null)
        },
        { type = "Hostname", address = resource.values.name },
      ],
    ) : a if a.address != null && a.address != ""
  ]

  # power_state is "active" or "shutoff" (the provider's argument).
  shutdown = try(resource.values.power_state == "shutoff", false)
}
