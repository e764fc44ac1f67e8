# The cloud config of the base: an overlay replaces this file with its own
# (configMapGenerator behavior: replace). Keep work_dir, cli_config_file,
# provider_lock_file and override_dir: they are the image's and the Deployment's paths.
cluster_name = "prod"
namespace    = "kube-system" # tfccm's own: the Deployment's
template_set = "baremetal" # your cloud's set (docs/install-*.md)
work_dir     = "/var/lib/tfccm"
override_dir = "/etc/tfccm/templates"

terraform {
  # The image's OpenTofu CLI config: providers from its mirror (tfccm/lbhost).
  cli_config_file = "/etc/tfccm/tofurc"
  # The checksums of the providers in the image's mirror, written when the
  # image was built: a provider package that does not match is refused.
  provider_lock_file = "/usr/local/share/tfccm/providers.lock.hcl"
}

# The state's namespace of its own (namespace.yaml), never kube-system.
backend "kubernetes" {
  namespace         = "tfccm-state"
  in_cluster_config = true
}
