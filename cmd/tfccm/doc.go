// Command tfccm is the offline CLI over the packages the controller uses.
//
//	tfccm render --config cloud.hcl --service svc.yaml --nodes nodes.yaml --out DIR
//	tfccm render --routes --config cloud.hcl --nodes nodes.yaml --out DIR
//	tfccm validate [--kind loadbalancer|routes] DIR...
//
// render writes exactly the workspace the controller would apply (same
// templates.Loader, same Render function, same workspace.Spec.WriteDir), ready
// for `tofu init && tofu plan`. validate checks template sets or modules
// against the template contract and prints file:line diagnostics.
package main
