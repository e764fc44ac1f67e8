# Example cloud config for an in-cluster deployment; replace with your own.
cluster_name = "prod"
work_dir     = "/var/lib/tfccm"
override_dir = "/etc/tfccm/templates"

terraform {
  binary   = "/usr/local/bin/tofu"
  pass_env = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]
}

backend "kubernetes" {
  namespace         = "kube-system"
  in_cluster_config = true
}
