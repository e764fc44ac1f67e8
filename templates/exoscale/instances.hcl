# Instances of Exoscale: exoscale_compute_instance resources in the
# infrastructure state, mapped the way Exoscale's cloud-controller-manager
# reports them, so Nodes registered under it keep their providerID
# (exoscale://<instance id>).
#
#   instance type = the instance type, <family>.<size> (e.g. standard.medium)
#   zone, region  = the instance's zone (e.g. ch-gva-2); Exoscale zones are
#                   its regions
# Instances an instance pool creates are not in Terraform state (the pool
# holds only their ids); register them through the Exoscale CCM or list them
# as exoscale_compute_instance data sources in your infrastructure.
# The format is documented in instances/mapping (package doc).

instance "compute" {
  match = resource.type == "exoscale_compute_instance"

  name          = resource.values.name
  provider_id   = "exoscale://${resource.values.id}"
  instance_type = resource.values.type
  zone          = resource.values.zone
  region        = resource.values.zone

  # Like Exoscale's CCM: without a private network address the public IPv4
  # and IPv6 addresses are also the InternalIPs.
  addresses = [
    for a in concat(
      [for n in try(resource.values.network_interface, []) : { type = "InternalIP", address = try(n.ip_address, null) }],
      length([for n in try(resource.values.network_interface, []) : n if try(n.ip_address, "") != ""]) > 0 ? [] : [
        { type = "InternalIP", address = try(resource.values.public_ip_address, null) },
        { type = "InternalIP", address = try(resource.values.ipv6_address, null) },
      ],
      [
        { type = "ExternalIP", address = try(resource.values.public_ip_address, null) },
        { type = "ExternalIP", address = try(resource.values.ipv6_address, null) },
        { type = "Hostname", address = resource.values.name },
      ],
    ) : a if a.address != null && a.address != ""
  ]

  shutdown = try(contains(["stopping", "stopped"], resource.values.state), false)
}
