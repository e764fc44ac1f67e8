terraform {
  # provider for_each (one provider configuration per LB host) needs OpenTofu 1.9.
  required_version = ">= 1.9.0"

  required_providers {
    # tfccm's own provider (lbhost/ in this repository), installed by
    # `make build` into the filesystem mirror bin/providers.
    lbhost = {
      source = "tfccm/lbhost"
    }
  }
}
