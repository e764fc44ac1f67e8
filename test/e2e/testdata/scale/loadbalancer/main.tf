# The scale bench's load balancer (test/e2e/scale_test.go), layered over
# the local set with override_dir: one terraform_data holding what a real
# frontend holds (the address tfccm allocated from its address pool, the
# ports, a backend per node). terraform_data is OpenTofu's built-in
# resource: no provider process and no cloud, so the bench measures the
# CCM (informers, render, the engine's queue, records and tofu runs with
# their state and lock) and not a cloud's API or HAProxy's reloads.
resource "terraform_data" "frontend" {
  input = {
    name    = var.load_balancer_id
    address = var.service.load_balancer_ips[0]
    ports   = [for p in var.service.ports : { port = p.port, node_port = p.node_port }]
    backends = [for n in var.nodes : {
      name    = n.name
      address = try([for a in n.addresses : a.address if a.type == "InternalIP"][0], null)
    }]
  }
}
