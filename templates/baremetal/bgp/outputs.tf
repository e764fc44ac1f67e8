output "speakers" {
  description = "Per active LB host, the hash of its FRR configuration (passwords masked)."
  value       = { for name, s in lbhost_bgp_speaker.host : name => s.config_hash }
}
