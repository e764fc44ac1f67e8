// Package devcluster runs a local Kubernetes control plane for tests and
// `make demo`: etcd and kube-apiserver on loopback, with generated
// certificates, a service-account key, RBAC on, and an admin kubeconfig.
//
// Start launches it; Stop tears it down (no leftover processes, ports or
// files). ForTest is the testing helper. The `devcluster` command in
// hack/devcluster wraps Start/Stop as `devcluster up|down` with detached
// processes for interactive use.
package devcluster
