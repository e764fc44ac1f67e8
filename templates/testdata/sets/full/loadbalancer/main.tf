module "echo" {
  source = "./modules/echo"
  value = {
    cluster_name       = var.cluster_name
    load_balancer_name = var.load_balancer_name
    service            = var.service
    nodes              = var.nodes
    health_check       = var.health_check
    settings           = var.settings
  }
}
