package harness

import (
	"fmt"
	"runtime"
	"testing"
)

// outcome records how a helper ended a test: skipped or failed (and
// with what message), or not at all.
type outcome struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (o *outcome) Helper() {}
func (o *outcome) Skip(args ...any) {
	o.skipped, o.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}
func (o *outcome) Fatalf(format string, args ...any) {
	o.failed, o.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder in its own goroutine (Skip and Fatalf end
// it, as in a test).
func run[T any](f func(testing.TB) T) (T, *outcome) {
	o := &outcome{}
	var got T
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = f(o)
	}()
	<-done
	return got, o
}

// TestBenchSettings: a benchmark runs at the size its variable gives and
// is skipped (saying how to run it) without one; its ratio is the
// default unless set, and a ratio that is not a number fails it.
func TestBenchSettings(t *testing.T) {
	const env = "TFCCM_TEST_BENCH_SETTING"
	for _, tc := range []struct {
		value   string
		count   int // 0: skipped
		ratio   float64
		badRate bool
	}{
		{value: "", count: 0, ratio: 1.2},
		{value: "0", count: 0, ratio: 0},
		{value: "-3", count: 0, ratio: -3},
		{value: "many", count: 0, badRate: true},
		{value: "200", count: 200, ratio: 200},
		{value: "0.8", count: 0, ratio: 0.8},
	} {
		t.Run(fmt.Sprintf("%q", tc.value), func(t *testing.T) {
			t.Setenv(env, tc.value)
			n, o := run(func(tb testing.TB) int { return BenchCount(tb, env, "usage text") })
			if tc.count == 0 {
				if !o.skipped || o.msg != "usage text" {
					t.Errorf("BenchCount: skipped %v (%q), want skipped saying the usage", o.skipped, o.msg)
				}
			} else if o.skipped || o.failed || n != tc.count {
				t.Errorf("BenchCount = %d (skipped %v, failed %v), want %d", n, o.skipped, o.failed, tc.count)
			}

			r, o := run(func(tb testing.TB) float64 { return BenchRatio(tb, env, 1.2) })
			if tc.badRate {
				if !o.failed {
					t.Errorf("BenchRatio = %v for %q, want the benchmark failed", r, tc.value)
				}
			} else if o.failed || o.skipped || r != tc.ratio {
				t.Errorf("BenchRatio = %v (failed %v: %s), want %v", r, o.failed, o.msg, tc.ratio)
			}
		})
	}
}
