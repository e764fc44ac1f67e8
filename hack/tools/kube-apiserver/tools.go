//go:build tools

// Package tools pins kube-apiserver so it builds from this module.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
