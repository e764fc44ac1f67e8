//go:build tools

// Package tools pins Helm so `go build helm.sh/helm/v3/cmd/helm` resolves
// from this module.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
