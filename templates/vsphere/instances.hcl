# Instances of VMware vSphere: vsphere_virtual_machine resources in the
# infrastructure state, mapped the way the vSphere cloud provider (CPI)
# reports them, so Nodes registered under it keep their providerID
# (vsphere://<VM BIOS UUID>, the VM's uuid attribute).
#
#   instance type = "vsphere-vm.cpu-<vCPUs>.mem-<GiB>gb.os-<guest>", the CPI's
#                   format (guest = ubuntu, photon, centos, rhel, debian,
#                   sles, windows from the guest id, else unknown)
#   zone, region  = the CPI reads them from vSphere tags (categories k8s-zone
#                   and k8s-region) on the host, cluster or datacenter; state
#                   holds only tag ids, so set them on the VM as extra_config
#                   "guestinfo.k8s.zone" and "guestinfo.k8s.region" (the same
#                   values), or override this file
#   addresses     = the guest's IP addresses (VMware Tools) as InternalIP,
#                   the name as Hostname
# The format is documented in instances/mapping (package doc).

instance "vm" {
  match = resource.mode == "managed" && resource.type == "vsphere_virtual_machine"

  name        = resource.values.name
  provider_id = "vsphere://${lower(resource.values.uuid)}"
  instance_type = format("vsphere-vm.cpu-%d.mem-%dgb.os-%s",
    resource.values.num_cpus,
    (resource.values.memory - resource.values.memory % 1024) / 1024,
  try(regex("^(ubuntu|photon|centos|rhel|debian|sles|windows)", lower(resource.values.guest_id))[0], "unknown"))
  zone   = try(resource.values.extra_config["guestinfo.k8s.zone"], null)
  region = try(resource.values.extra_config["guestinfo.k8s.region"], null)

  addresses = concat(
    [
      for ip in distinct(concat([try(resource.values.default_ip_address, "")], try(resource.values.guest_ip_addresses, []))) : { type = "InternalIP", address = ip }
      if ip != null && ip != "" && !can(regex("^(?i)fe80:", ip))
    ],
    [{ type = "Hostname", address = resource.values.name }],
  )

  shutdown = try(resource.values.power_state == "poweredOff", false)
}
