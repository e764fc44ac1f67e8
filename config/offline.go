package config

import "github.com/zclconf/go-cty/cty"

// The cloud config as an offline render (tfccm render, CI) uses it.

// OfflineBackendPath is the local backend's path in an offline render: "."
// keeps each workspace's state beside its files ("<workspace>.tfstate").
const OfflineBackendPath = "."

// Offline returns a copy of c for rendering a workspace that plans without
// the cluster (CI): the backend is local, its state kept in the workspace
// directory, and state encryption is off (the scratch state holds nothing
// the keys protect, and the keys stay in the cluster). Everything else,
// and so every input and template, is c's.
func (c *Config) Offline() *Config {
	o := *c
	o.Backend = &Backend{Type: "local", Attributes: map[string]cty.Value{"path": cty.StringVal(OfflineBackendPath)}}
	o.Encryption = nil
	if c.Terraform != nil {
		t := *c.Terraform
		t.Encryption = nil
		o.Terraform = &t
	}
	return &o
}
