terraform {
  required_version = ">= 1.8.0"

  required_providers {
    # tfccm's own provider (lbhost/ in this repository), installed by
    # `make build` into the filesystem mirror bin/providers.
    lbhost = {
      source = "tfccm/lbhost"
    }
  }
}
