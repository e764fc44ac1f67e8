cluster_name = "prod"
template_set = "hcloud"
work_dir     = "fleet/work"
load_balancer {
  settings = { location = "fsn1" }
}
