// Package poolapi owns the AddressPool object (group tfccm.io, version
// v1alpha1): its Go types, their deep copies, the CRD's schema they must
// match (deploy/helm/tfccm/crds) and the conversion of an object into the
// address pool package ipam allocates from, checked by the cloud config's
// own rules.
package poolapi
