//go:build tools

// Package tools pins kube-apiserver and kubectl so they build from this module.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
