// Package ccm is tfccm's cloudprovider.Interface: the façade the
// cloud-controller-manager calls. It owns building the engine and the
// load-balancer controller from the cloud config, the engine's gate and
// routing each workspace result to the one facet that owns it, and the
// facets that are answers over state: LoadBalancer (delegating every call
// to package lbcontroller), Routes, Instances and Zones. It holds no
// Terraform or HCL logic of its own and never runs tofu.
package ccm

//go:generate go generate ./lbcontroller
