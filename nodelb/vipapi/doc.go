// Package vipapi owns the NodeVIP object (group tfccm.io, version
// v1alpha1): the desired state of one load balancer address served by the
// cluster's nodes (node mode, docs/node-mode.md) and the status the node
// agents report on it. Its Go types must match the CRD in
// deploy/helm/tfccm/crds (TestCRDMatchesTypes). NodeVIP objects live in
// tfccm's namespace and are the admin's side: the CCM's provider writes
// their spec, the node agents only their status; tenants get no access.
package vipapi
