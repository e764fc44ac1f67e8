// Package testkit is tfccm's one toolkit of test helpers that do not need a
// cluster: polling a condition (Poll, Eventually), fetching over HTTP with
// a fresh connection and retrying (Get, GetEventually), golden files with
// an -update flag (Golden), and running OpenTofu in a test working
// directory (Tofu). It depends on the standard library only, so the unit
// tests of the leaf packages use it as freely as the e2e suites;
// test/harness (CCM processes, nodes, Kubernetes waiters) builds on it.
package testkit
