// Package provider implements k8s.io/cloud-provider's interfaces for tfccm as
// a thin adapter over the templates, workspace and state packages.
// It holds no Terraform or HCL logic of its own and never runs tofu: one
// file per facet (loadbalancer*.go, routes*.go, instances*.go, zones.go),
// review mode (review.go; its pending plans kept in Secrets, planstore.go), the Events it records (events.go, with every
// reason declared once in reasons.go and published as docs/events.md).
package ccm

//go:generate go test -run TestEventsDocUpToDate -update .
