//go:build tools

// Package tools pins what lbsuite (the upstream e2e framework with the
// sig-network specs, built with `go test -c`) needs, so `make tools-e2e`
// builds bin/e2e.test from this module.
package tools

import (
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "k8s.io/kubernetes/test/e2e/framework"
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
	_ "k8s.io/kubernetes/test/e2e/network"
	_ "k8s.io/utils/net"
)
