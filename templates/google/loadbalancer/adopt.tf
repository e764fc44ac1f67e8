# Adoption (tfccm.io/adopt): the first plan imports the existing regional
# static address by its name (in settings.region) instead of reserving a
# new one, so the Service keeps its address. Google's own controller builds
# its load balancer from a target pool, which this set's backend services
# cannot take over without replacing the forwarding rules; so the address is
# what is adopted (promote an ephemeral address to a static one first, see
# docs/migrate-from-ccm.md), and the forwarding rules, backend services and
# health check are new. The provider's documented import id is
# "projects/<project>/regions/<region>/addresses/<name>", or
# "<region>/<name>" in the provider's project.

variable "adopt" {
  description = "tfccm.io/adopt: the existing load balancer to import instead of creating one (key id, and the parts' ids), or null (see README.md)."
  type        = map(string)
  default     = null
}

import {
  for_each = var.adopt == null || !local.reserve ? {} : {
    address = var.settings.project == null ? "${var.settings.region}/${var.adopt.id}" : "projects/${var.settings.project}/regions/${var.settings.region}/addresses/${var.adopt.id}"
  }

  to = google_compute_address.this[0]
  id = each.value
}
