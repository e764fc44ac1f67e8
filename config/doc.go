// Package config loads tfccm's cloud config: one HCL file passed with
// --cloud-config, decoded with hcl/v2's gohcl. Every mistake is reported as an
// hcl.Diagnostics naming file:line and the field.
package config
