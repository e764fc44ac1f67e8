// Package clouds tests the built-in real-cloud template sets end to end
// without the clouds. Each set (hcloud, digitalocean, oci, openstack,
// google, exoscale; proxmox and vsphere are instances only) is rendered
// (golden files in testdata/golden, rewritten with -update), validated,
// and planned, applied, updated and destroyed by the real OpenTofu through
// the schema-backed stand-in provider (test/standin) for a matrix of
// Services, asserting on what the cloud would have been asked to do (the
// stand-in's call log). Each set's instances.hcl is checked against an
// infrastructure fixture of the cloud's server resources applied through
// the stand-in, and read again with `tfccm state query` (the CLI built from
// this tree; a cloud config with the fixture as state source, read the way
// the controller's Instances facet reads it).
package clouds
