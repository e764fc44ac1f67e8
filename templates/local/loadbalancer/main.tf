locals {
  # Owner of this LB's fragment and VIP claim. '_' separates the two names
  # unambiguously: neither may contain it.
  owner = "${var.cluster_name}_${var.load_balancer_name}"

  # --- VIP allocation ------------------------------------------------------
  # Claims are files claims/<VIP> holding their owner, written by lb.sh at
  # apply time and read here at plan time.
  claims_dir = "${var.settings.state_dir}/claims"
  claims     = { for f in fileset(local.claims_dir, "*") : f => trimspace(file("${local.claims_dir}/${f}")) }
  pool       = var.settings.vip_pool
  mine       = sort([for ip, o in local.claims : ip if o == local.owner && cidrcontains(local.pool, ip)])
  others     = { for ip, o in local.claims : ip => o if o != local.owner }

  # Probe from a hash of the owner so that allocation is deterministic and
  # spread; skip the network and broadcast addresses.
  pool_hosts = min(pow(2, 32 - tonumber(split("/", local.pool)[1])) - 2, 1024)
  start      = parseint(substr(sha256(local.owner), 0, 7), 16) % local.pool_hosts
  free = [for i in range(local.pool_hosts) : cidrhost(local.pool, 1 + (local.start + i) % local.pool_hosts)
  if !contains(keys(local.others), cidrhost(local.pool, 1 + (local.start + i) % local.pool_hosts))]

  requested = var.service.load_balancer_ip
  vip = (local.requested != null ? local.requested :
    length(local.mine) > 0 ? local.mine[0] :
  length(local.free) > 0 ? local.free[0] : null)

  # --- backends --------------------------------------------------------------
  ipv4 = "^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$"
  backends = [for n in var.nodes : {
    name    = n.name
    address = [for a in n.addresses : a.address if a.type == "InternalIP" && can(regex(local.ipv4, a.address))][0]
  } if length([for a in n.addresses : a if a.type == "InternalIP" && can(regex(local.ipv4, a.address))]) > 0]

  # Everything the fragment is made of. lb.sh validates each value again and
  # renders the HAProxy config from them; nothing here is spliced into a
  # command line.
  frontend = {
    OWNER         = local.owner
    CLOUD_NETNS   = var.settings.cloud_netns
    STATE_DIR     = var.settings.state_dir
    PORTS         = join(" ", [for p in var.service.ports : "${p.port}:${p.node_port}"])
    BACKENDS      = join(" ", [for b in local.backends : "${b.name}=${b.address}"])
    HC_PROTOCOL   = var.health_check.protocol
    HC_PORT       = tostring(var.health_check.port)
    HC_PATH       = var.health_check.protocol == "TCP" ? "" : var.health_check.path
    SOURCE_RANGES = join(" ", var.service.source_ranges)
    PROXY         = var.service.proxy_protocol ? "true" : "false"
    AFFINITY      = coalesce(var.service.session_affinity, "None")
    INTERNAL      = var.service.internal ? "true" : "false"
    SERVICE       = "${var.service.namespace}/${var.service.name}"
  }
}

# The VIP: a claim file in state_dir and the address on lo in the cloud netns.
resource "terraform_data" "vip" {
  triggers_replace = { VIP = local.vip, OWNER = local.owner }
  input = {
    VIP         = local.vip
    OWNER       = local.owner
    CLOUD_NETNS = var.settings.cloud_netns
    STATE_DIR   = var.settings.state_dir
  }

  lifecycle {
    create_before_destroy = true

    precondition {
      condition     = local.vip != null
      error_message = "The VIP pool ${local.pool} is exhausted: every address is claimed by another load balancer."
    }
    precondition {
      condition     = local.requested == null || cidrcontains(local.pool, coalesce(local.requested, "0.0.0.0"))
      error_message = "The requested load balancer IP ${coalesce(local.requested, "-")} is outside the local cloud's VIP pool ${local.pool}."
    }
    precondition {
      condition     = local.requested == null || !contains(keys(local.others), coalesce(local.requested, "-"))
      error_message = "The requested load balancer IP ${coalesce(local.requested, "-")} is already used by load balancer ${lookup(local.others, coalesce(local.requested, "-"), "-")}."
    }
  }

  provisioner "local-exec" {
    command     = "bash \"${path.module}/lb.sh\" claim"
    environment = self.input
  }

  provisioner "local-exec" {
    when        = destroy
    command     = "bash \"${path.module}/lb.sh\" release"
    environment = self.input
  }
}

# The HAProxy fragment: one frontend and backend per Service port. Any input
# change replaces it, new before old; the old one's destroy leaves a fragment
# that a newer config has already rewritten.
resource "terraform_data" "frontend" {
  triggers_replace = local.frontend_env
  input            = local.frontend_env

  lifecycle {
    create_before_destroy = true
  }

  provisioner "local-exec" {
    command     = "bash \"${path.module}/lb.sh\" apply"
    environment = self.input
  }

  provisioner "local-exec" {
    when        = destroy
    command     = "bash \"${path.module}/lb.sh\" remove"
    environment = self.input
  }
}

locals {
  frontend_env = merge(local.frontend, {
    VIP       = terraform_data.vip.output.VIP
    CONFIG_ID = substr(sha256(jsonencode(merge(local.frontend, { VIP = terraform_data.vip.output.VIP }))), 0, 16)
  })
}
