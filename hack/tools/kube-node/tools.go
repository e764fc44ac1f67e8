//go:build tools

// Package tools pins the node and controller parts of Kubernetes (kubelet,
// kube-proxy, kube-controller-manager, kube-scheduler) and the e2e test
// image agnhost, so they build from this module for real-node clusters.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/test/images/agnhost"
)
