package harness

import (
	"os"
	"strconv"
	"testing"
)

// BenchCount is the size a benchmark runs at, read from the environment
// variable env; unset, zero or not a number, the benchmark is not asked
// for and t is skipped with usage (which says how to run it).
func BenchCount(t testing.TB, env, usage string) int {
	t.Helper()
	n, _ := strconv.Atoi(os.Getenv(env))
	if n <= 0 {
		t.Skip(usage)
	}
	return n
}

// BenchRatio is the ratio a benchmark must stay within, read from the
// environment variable env, or def when it is unset; a value that is not a
// number fails t.
func BenchRatio(t testing.TB, env string, def float64) float64 {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	return f
}
