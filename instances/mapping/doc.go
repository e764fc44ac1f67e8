// Package mapping parses instances.hcl files and evaluates them against
// Terraform state resources to produce instances (node name, providerID,
// instance type, zone, region, addresses, labels, shutdown).
//
// An instances.hcl file holds one or more blocks:
//
//	instance "node" {
//	  match         = resource.type == "terraform_data" && resource.name == "node"
//	  name          = resource.values.output.name
//	  provider_id   = "terraform://local/${resource.values.output.name}"
//	  instance_type = resource.values.output.instance_type
//	  zone          = resource.values.output.zone
//	  region        = resource.values.output.region
//	  addresses     = [{ type = "InternalIP", address = resource.values.output.address }]
//	  labels        = { "example.com/netns" = resource.values.output.netns }
//	  shutdown      = !resource.values.output.running
//	}
//
// Each expression is evaluated once per state resource with one variable,
// resource = { address, mode, type, name, index, module, provider, values },
// where values holds the resource's state attributes. The first block (in
// file order) whose match is true maps the resource; resources no block
// matches are not instances. Sensitive attributes are marked: a published
// field that depends on one is an error, so secrets never leave the state.
//
// Functions: the cty standard library (format, lower, upper, replace, regex,
// split, join, lookup, merge, coalesce, concat, contains, keys, length,
// jsondecode, substr, trim*, ...) plus try and can.
package mapping
