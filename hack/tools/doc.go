// Package tools holds no code of its own: its subdirectories are the
// wrapper modules hack/tools.sh builds tfccm's pinned tools from (OpenTofu,
// kube-apiserver and kubectl, helm, the parts of real nodes, the upstream
// e2e suite), each with its own go.mod so their dependencies never mix with
// tfccm's. Its test keeps the Kubernetes wrappers' shared dependencies at
// the versions tfccm itself builds with.
package tools
