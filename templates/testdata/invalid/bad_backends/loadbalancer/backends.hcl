backends "lbhost_frontend" {
  attributes = ["*.backends"]
}
