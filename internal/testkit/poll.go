package testkit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Interval is how often Eventually checks its condition.
const Interval = 100 * time.Millisecond

// stopError ends Poll at once (Stop).
type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

// Stop wraps err so that Poll returns it at once instead of checking again:
// for a condition that can no longer become true (a process exited).
func Stop(err error) error { return stopError{err} }

// Poll checks cond at once and then every interval until it returns nil,
// timeout passes or ctx ends, or cond returns a Stop error. The error names
// what was awaited, the timeout and cond's last error, which it wraps: the
// last one cond gave before the deadline, as a check cut short by it fails
// only for that (a client's "would exceed context deadline"), which says
// nothing of the state awaited.
func Poll(ctx context.Context, interval, timeout time.Duration, what string, cond func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last error
	for {
		err := cond(ctx)
		var stop stopError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &stop):
			return fmt.Errorf("%s: %w", what, stop.err)
		case ctx.Err() == nil || last == nil:
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not true after %s: %w", what, timeout, last)
		case <-tick.C:
		}
	}
}

// Eventually is Poll for tests: it checks cond every Interval and fails t
// when cond does not hold within timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	if err := Poll(context.Background(), Interval, timeout, what, cond); err != nil {
		t.Fatal(err)
	}
}
