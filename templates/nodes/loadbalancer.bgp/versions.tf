terraform {
  required_version = ">= 1.8.0"

  required_providers {
    # tfccm's own provider (lbhost/ in this repository) with its
    # kubernetes block: node mode's NodeVIP objects.
    lbhost = {
      source = "tfccm/lbhost"
    }
  }
}
