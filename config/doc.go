// Package config loads tfccm's cloud config: one HCL file passed with
// --cloud-config, decoded with hcl/v2's gohcl. Every mistake is reported as an
// hcl.Diagnostics naming file:line and the field.
//
// It owns the config's defaults (defaults.go, one place; the workspace
// engine and the state store use them too) and the parsing of its duration
// settings (durations.go, one table). Each setting is documented by its
// field's doc tag: docs/configuration.md is generated from them (go
// generate ./config, checked by TestReferenceUpToDate).
package config

//go:generate go test -run TestReferenceUpToDate -update .
