// Package mirror owns where the lbhost provider lives in a filesystem
// mirror, and the CLI configuration that makes OpenTofu (or Terraform)
// install it from there and never from the network.
package mirror
