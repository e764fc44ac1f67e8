instance "node" {
  match = resource.type == "terraform_data"
  name  = resource.values.output.name
}
