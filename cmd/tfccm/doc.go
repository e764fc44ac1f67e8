// Command tfccm is the offline CLI over the packages the controller uses:
//
//	tfccm render --config cloud.hcl --service svc.yaml --nodes nodes.yaml --out DIR
//	tfccm render --routes --config cloud.hcl --nodes nodes.yaml --out DIR
//	tfccm validate [--kind loadbalancer|routes] DIR...
//	tfccm state query --config cloud.hcl [--name NODE] [--provider-id ID] [--json]
//	tfccm approve [--tfccm-namespace T] (--list [--namespace N] | [--namespace N] --service S | --routes) [--plan-hash H | --yes]
//	tfccm unlock --config cloud.hcl --workspace NAME [--dry-run] [--force]
//
// render writes exactly the workspace the controller would apply (same
// templates.Loader, same Render function, same workspace.Spec.WriteDir), ready
// for `tofu init && tofu plan`. validate checks template sets or modules
// against the template contract and prints file:line diagnostics. state
// answers node lookups from Terraform state as the controller does; approve
// (an approver's command) shows and approves a published plan in review
// mode, on its ConfigMap in tfccm's namespace; unlock releases a state lock
// whose holder is gone.
//
// Each command lives in the file named after it; the commands map in
// main.go is the one registry (`tfccm help` lists it).
package main
