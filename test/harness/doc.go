// Package harness is what test/e2e and `make demo` (hack/demo) share to
// drive the real CCM against a real control plane: starting and stopping
// the terraform-cloud-controller-manager process with the standard flags
// (ccm.go), registering Nodes the way a kubelet with
// --cloud-provider=external does (nodes.go), waiting for conditions
// (wait.go, polling with internal/testkit), dumping an object's Events (events.go), writing a cloud
// config (cloudconfig.go), installing the Helm chart (helm.go) and finding
// this machine's processes by command line (procs.go).
//
// Everything here returns plain errors, so a command can use it; the
// tests wrap it in thin helpers that fail the test instead. The one
// exception is bench.go: the benchmarks' sizes and limits from the
// environment, which skip or fail the benchmark itself.
package harness
