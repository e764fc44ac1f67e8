// Package e2e holds tfccm's black-box end-to-end tests: a real control plane
// (test/devcluster), the real CCM binary, the real OpenTofu from `make tools`
// and the local cloud (test/localcloud). Run them with `make test`.
package e2e
