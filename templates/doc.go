// Package templates loads, validates and renders tfccm's template sets.
//
// A template set is a directory holding Terraform root modules:
//
//	loadbalancer/            the default load balancer module
//	loadbalancer.<variant>/  variants picked per Service with tfccm.io/template
//	routes/                  the routes module (one workspace per cluster)
//	instances.hcl            the state-to-instance mapping read by package state
//
// Built-in sets are embedded in the binary; a per-cluster override directory
// (config.OverrideDir) replaces them module by module and is re-read when it
// changes (Loader). A module declares only the inputs it uses; loading checks
// them against the engine's contract (Inputs) and the required outputs.
//
// Rendering is pure: RenderLoadBalancer and RenderRoutes turn Kubernetes
// objects into a workspace.Spec (module files, a tfccm.auto.tfvars written with
// the injection-proof printer of internal/tfvars, a generated backend block)
// whose Hash is the engine's no-op key.
// The controller and `tfccm render` share this code path and workspace.Spec.WriteDir.
// The only process this package starts is `<binary> version`, when a set
// needs OpenTofu (CheckBinary); plans and applies are package workspace's.
package templates
