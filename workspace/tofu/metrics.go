package tofu

// What a runner measures, and the interface the engine's metrics take it
// through.

import "time"

// Results a runner counts (Metrics.Count).
const (
	ResultSuccess  = "success"
	ResultError    = "error"
	ResultLocked   = "locked"
	ResultCanceled = "canceled"
	// ResultPrepared is an init that did not run: the workspace started
	// from its template's prepared .terraform (prepared.go).
	ResultPrepared = "prepared"
)

// Metrics receives what runners measure; the engine implements it over
// its registered metrics.
type Metrics interface {
	// Observe records the wall time of one command of operation op.
	Observe(op string, took time.Duration)
	// Count counts one operation op with its result.
	Count(op, result string)
	// ChecksumMismatch counts a command refused because provider's
	// package did not match its locked checksums.
	ChecksumMismatch(provider string)
}

func (t *Setup) observe(op string, took time.Duration) {
	if t.Metrics != nil {
		t.Metrics.Observe(op, took)
	}
}

func (t *Setup) count(op, result string) {
	if t.Metrics != nil {
		t.Metrics.Count(op, result)
	}
}
