// Package templates owns tfccm's template sets and their contract with
// the engine: loading them (built-in sets embedded in the binary, a
// per-cluster override directory replacing them module by module and
// re-read when it changes), checking each module's inputs and outputs
// against the contract (Inputs, RequiredOutputs, the workspace kinds), and
// rendering Kubernetes objects into a workspace.Spec.
//
// A template set is a directory holding Terraform root modules:
//
//	loadbalancer/            the default load balancer module
//	loadbalancer.<variant>/  variants picked per Service with tfccm.io/template
//	routes/                  the routes module (one workspace per cluster)
//	instances.hcl            the state-to-instance mapping read by package instances
//
// Rendering is pure: Set.RenderLoadBalancer (the one render entry point of
// a load balancer) and Set.RenderRoutes turn Kubernetes objects into a
// workspace.Spec (module files, a tfccm.auto.tfvars written with the
// injection-proof printer of internal/tfvars, a generated backend block)
// whose Hash is the engine's no-op key. A load balancer always renders
// with the Service's addresses as the caller's address book (package ipam)
// decided them (Addresses); this package decides none. The controller,
// `tfccm render` and `tfccm plan` call the same entry point with the same
// addresses, and write the Spec with workspace.Spec.WriteDir.
//
// The only process this package starts is `<binary> version`, when a set
// needs OpenTofu (CheckBinary); plans and applies are package workspace's.
package templates
