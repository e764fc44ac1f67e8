# Instances of Google Compute Engine: google_compute_instance resources in the
# infrastructure state, mapped the way the GCE cloud-controller-manager
# reports them, so Nodes registered under it keep their providerID
# (gce://<project>/<zone>/<instance name>).
#
#   instance type = the machine type (e.g. e2-standard-4)
#   zone          = the instance's zone (e.g. europe-west1-b)
#   region        = the zone without its last part (europe-west1)
# The format is documented in instances/mapping (package doc).

instance "compute" {
  match = resource.mode == "managed" && resource.type == "google_compute_instance"

  name          = resource.values.name
  provider_id   = "gce://${resource.values.project}/${resource.values.zone}/${resource.values.name}"
  instance_type = element(split("/", resource.values.machine_type), length(split("/", resource.values.machine_type)) - 1)
  zone          = resource.values.zone
  region        = regex("^(.*)-[a-z]$", resource.values.zone)[0]

  addresses = [
    for a in concat(
      [for n in resource.values.network_interface : { type = "InternalIP", address = try(n.network_ip, null) }],
      flatten([for n in resource.values.network_interface : [for c in try(n.access_config, []) : { type = "ExternalIP", address = try(c.nat_ip, null) }]]),
      [{ type = "Hostname", address = resource.values.name }],
    ) : a if a.address != null && a.address != ""
  ]

  # TERMINATED is a stopped instance; SUSPENDED keeps memory but runs nothing.
  shutdown = try(contains(["TERMINATED", "STOPPED", "SUSPENDED"], resource.values.current_status), false)
}
