# Instances of Oracle Cloud: oci_core_instance resources in the
# infrastructure state, mapped the way the OCI cloud-controller-manager
# reports them, so Nodes registered under it keep their providerID
# (oci://<instance OCID>).
#
#   zone   = the availability domain without the tenancy prefix
#            ("Uocm:EU-FRANKFURT-1-AD-1" -> "EU-FRANKFURT-1-AD-1")
#   region = the instance's region
# The format is documented in instances/mapping (package doc).

instance "compute" {
  match = resource.mode == "managed" && resource.type == "oci_core_instance"

  name          = resource.values.display_name
  provider_id   = "oci://${resource.values.id}"
  instance_type = resource.values.shape
  zone          = try(split(":", resource.values.availability_domain)[1], resource.values.availability_domain)
  region        = resource.values.region

  addresses = [
    for a in [
      { type = "InternalIP", address = try(resource.values.private_ip, null) },
      { type = "ExternalIP", address = try(resource.values.public_ip, null) },
      { type = "Hostname", address = resource.values.display_name },
    ] : a if a.address != null && a.address != ""
  ]

  shutdown = try(resource.values.state == "STOPPED", false)
}
