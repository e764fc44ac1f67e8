instance "node" {
  name = 
}
