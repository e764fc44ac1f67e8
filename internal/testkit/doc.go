// Package testkit is tfccm's one toolkit of test helpers that do not need a
// cluster. It polls a condition (Poll, Stop, Eventually), fetches over HTTP
// with a fresh connection, once or until it answers 200 OK (Get, GetOK,
// GetEventually), keeps golden files with an -update flag (Golden,
// LineDiff), runs OpenTofu in a test working directory with a clean
// environment (Tofu) and looks for secrets in files, saved plans' zip
// entries included (FindSecrets, SecretsIn). It depends on the standard
// library only, so the unit tests of the leaf packages use it as freely as
// the e2e suites; test/harness (CCM processes, nodes, Kubernetes waiters)
// builds on it. The -update flag is registered only in test binaries.
package testkit
