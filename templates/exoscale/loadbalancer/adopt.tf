# Adoption (tfccm.io/adopt): the first plan imports the existing network
# load balancer instead of creating one, so it keeps its address. The
# provider's documented import ids carry the zone: "<nlb id>@<zone>" for the
# NLB and "<nlb id>/<service id>@<zone>" for its services, whose ids the
# annotation names as parts "service.<protocol>-<port>" (e.g.
# {"id": "<nlb id>", "service.tcp-80": "<service id>"}); a Service port
# without a part is created on the adopted NLB.

variable "adopt" {
  description = "tfccm.io/adopt: the existing load balancer to import instead of creating one (key id, and the parts' ids), or null (see README.md)."
  type        = map(string)
  default     = null
}

import {
  for_each = var.adopt == null ? {} : { load_balancer = "${var.adopt.id}@${var.settings.zone}" }

  to = exoscale_nlb.this
  id = each.value
}

import {
  for_each = var.adopt == null ? {} : {
    for p in var.service.ports : "${lower(p.protocol)}-${p.port}" => "${var.adopt.id}/${var.adopt["service.${lower(p.protocol)}-${p.port}"]}@${var.settings.zone}"
    if contains(keys(var.adopt), "service.${lower(p.protocol)}-${p.port}")
  }

  to = exoscale_nlb_service.port[each.key]
  id = each.value
}
