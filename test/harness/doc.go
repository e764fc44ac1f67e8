// Package harness owns what drives the real CCM against a real control
// plane. test/e2e, test/nodes, lbhost/hosttest, `make demo` (hack/demo) and
// `make conformance` (hack/conformance) share it for starting and stopping
// the terraform-cloud-controller-manager process with the standard flags,
// registering Nodes the way a kubelet with --cloud-provider=external does,
// waiting for conditions (polling with internal/testkit), dumping an
// object's Events, writing a cloud config, installing the Helm chart and
// finding this machine's processes by command line.
//
// Everything here returns plain errors, so a command can use it; the
// tests wrap it in thin helpers that fail the test instead. The one
// exception is the benchmarks' sizes and limits from the environment,
// which skip or fail the benchmark itself.
package harness
