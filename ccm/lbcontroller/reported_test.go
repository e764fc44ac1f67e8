package lbcontroller

import "testing"

// TestReportedOncePerValue: a value is new the first time a key has it,
// again after another value or after forget, and not when repeated; the
// empty value is a value like any other.
func TestReportedOncePerValue(t *testing.T) {
	type step struct {
		forget bool
		key    string
		value  string
		want   bool
	}
	steps := []step{
		{key: "a", value: "x", want: true},
		{key: "a", value: "x", want: false},
		{key: "b", value: "x", want: true},
		{key: "a", value: "y", want: true},
		{key: "a", value: "x", want: true},
		{forget: true, key: "a"},
		{key: "a", value: "x", want: true},
		{key: "c", value: "", want: true},
		{key: "c", value: "", want: false},
	}
	var r reported[string]
	for i, s := range steps {
		if s.forget {
			r.forget(s.key)
			continue
		}
		if got := r.isNew(s.key, s.value); got != s.want {
			t.Fatalf("step %d: isNew(%q, %q) = %v, want %v", i, s.key, s.value, got, s.want)
		}
	}
}
