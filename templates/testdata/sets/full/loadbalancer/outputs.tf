output "ingress" {
  value = [{ ip = "10.252.0.1", hostname = null, ip_mode = "VIP" }]
}

# The inputs exactly as tofu sees them, for the round-trip test.
output "inputs" {
  value = module.echo.value
}
