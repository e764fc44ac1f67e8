# Deny a plan that replaces (destroys and creates again) a resource holding a
# public address: the load balancer would come back on a new address, and
# every DNS record pointing at the old one would break. On a LAN whose VIPs
# are private addresses, drop the `private` test to protect those as well.
policy "no-public-address-replacement" {
  action = "deny"

  variable "replaced" {
    expression = "plan.resource_changes.filter(rc, 'delete' in rc.change.actions && 'create' in rc.change.actions)"
  }
  # Attribute names the built-in sets' providers keep addresses in.
  variable "keys" {
    expression = "['ipv4', 'ipv6', 'ip', 'ip_address', 'address', 'public_ip']"
  }
  variable "private" {
    expression = "r'^(10\\.|192\\.168\\.|172\\.(1[6-9]|2[0-9]|3[01])\\.|127\\.|f[cd])'"
  }
  variable "public" {
    expression = <<-CEL
      variables.replaced.filter(rc, type(rc.change.before) == map &&
        variables.keys.exists(k, k in rc.change.before && type(rc.change.before[k]) == string &&
          rc.change.before[k] != '' && !rc.change.before[k].matches(variables.private)))
    CEL
  }

  validation {
    expression         = "variables.public.size() == 0"
    message_expression = "'replaces ' + variables.public.map(rc, rc.address).join(', ') + ', which holds a public address: the load balancer would get a new one'"
  }
}
