// Package config owns tfccm's cloud config: the one HCL file passed with
// --cloud-config, decoded with hcl/v2's gohcl into Config. It owns every
// setting's declaration and documentation (its field's doc tag, from which
// docs/configuration.md is generated and checked), every default (declared
// once, applied once by Parse), the parsing and bounds of every duration
// setting, and every check of a setting's value, each reported as an
// hcl.Diagnostics naming file:line and the field. Readers (the CCM, the
// template renderer, policies, change windows, the CLI) read the parsed
// Config; the workspace engine and the state store, which also run from
// options built without one (their tests), fall back to the same
// constants. It also owns the one conversion of the Helm chart's typed
// baremetal values (baremetal_values_file), one more spelling of
// load_balancer settings; package chartvalues turns a whole values file
// into a Config.
//
// It is a leaf: it imports no other tfccm package but internal helpers.
package config

//go:generate go test -run TestReferenceUpToDate -update .
