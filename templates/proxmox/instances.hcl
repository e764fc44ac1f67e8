# Instances of Proxmox VE: proxmox_virtual_environment_vm resources (bpg/proxmox
# provider) in the infrastructure state, mapped the way sergelogvinov's
# proxmox-cloud-controller-manager reports them, so Nodes registered under it
# keep their providerID (proxmox://<region>/<vm id>).
#
#   region        = the Proxmox cluster's name in that CCM's configuration;
#                   here from a VM tag "region-<name>" (Proxmox tags are
#                   names in state), empty without one (proxmox:///<vm id>)
#   zone          = the Proxmox node (host) the VM runs on, or a VM tag
#                   "zone-<name>" when set
#   instance type = "<vCPUs>VCPU-<memory GiB>GB" (cores x sockets, dedicated
#                   memory rounded), the CCM's format
#   addresses     = the guest agent's IPv4/IPv6 addresses (loopback and
#                   link-local left out) as InternalIP, and the name as Hostname
# Templates (template = true) and VMs without a name are not instances.
# The format is documented in instances/mapping (package doc).

instance "vm" {
  match = (
    resource.mode == "managed" && resource.type == "proxmox_virtual_environment_vm" &&
    try(resource.values.template, false) != true && try(resource.values.name, null) != null
  )

  name = resource.values.name
  provider_id = format("proxmox://%s/%d",
    try([for t in resource.values.tags : trimprefix(t, "region-") if can(regex("^region-.", t))][0], ""),
  resource.values.vm_id)
  instance_type = format("%.0fVCPU-%.0fGB",
    try(resource.values.cpu[0].cores, 1) * try(resource.values.cpu[0].sockets, 1),
  try(resource.values.memory[0].dedicated, 512) / 1024)
  zone   = try([for t in resource.values.tags : trimprefix(t, "zone-") if can(regex("^zone-.", t))][0], resource.values.node_name)
  region = try([for t in resource.values.tags : trimprefix(t, "region-") if can(regex("^region-.", t))][0], null)

  addresses = concat(
    [
      for ip in flatten(concat(try(resource.values.ipv4_addresses, []), try(resource.values.ipv6_addresses, []))) : { type = "InternalIP", address = ip }
      if ip != "" && !can(regex("^127\\.", ip)) && ip != "::1" && !can(regex("^(?i)fe80:", ip))
    ],
    [{ type = "Hostname", address = resource.values.name }],
  )

  # started is what the provider reads back from the VM's status.
  shutdown = !try(resource.values.started, true)
}
