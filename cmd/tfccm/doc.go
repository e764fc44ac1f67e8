// Command tfccm is the offline CLI over the packages the controller uses.
// It owns no logic of its own: each subcommand parses its flags, calls the
// package that does the work and prints the result, for an admin, an
// approver or a GitOps pipeline. For example:
//
//	tfccm render --config cloud.hcl --service svc.yaml --nodes nodes.yaml --out DIR
//	tfccm plan --config cloud.hcl [--objects dump.yaml] [--format text|markdown|json]
//	tfccm validate [--kind loadbalancer|routes] DIR...
//	tfccm state query --config cloud.hcl [--name NODE] [--provider-id ID] [--json]
//	tfccm unlock --config cloud.hcl --workspace NAME [--dry-run] [--force]
//
// Installed as the kubectl plugin kubectl-tfccm, the day-2 commands work
// from a workstation with the user's kubeconfig and RBAC: status,
// services and approve read the cluster; workspaces and unlock without
// --config find the leader through its Lease and run themselves in its
// pod. completion prints shell completion scripts, also for kubectl
// through kubectl_complete-tfccm.
//
// render writes exactly the workspace the controller would apply (same
// templates.Loader, same Render function, same workspace.Spec.WriteDir),
// ready for `tofu init && tofu plan`.
//
// Each subcommand lives in the file named after it, and the commands table
// is its one registry: `tfccm help` lists every subcommand from it.
package main
