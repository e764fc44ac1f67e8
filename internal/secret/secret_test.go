package secret

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestScrubber(t *testing.T) {
	s := NewScrubber([]string{"secret", "secret-long", ""}).With(Strings([]byte(`{"a":"pw1234","n":12,"big":123456}`)))
	got := s.Scrub("x secret-long y secret z pw1234 n=12 123456")
	if want := "x (sensitive) y (sensitive) z (sensitive) n=12 (sensitive)"; got != want {
		t.Fatalf("scrub = %q, want %q", got, want)
	}
}

func TestScrubError(t *testing.T) {
	s := NewScrubber([]string{"abc123", "passed-value"})
	err := s.ScrubError(errors.Join(errors.New("backend said abc123 and passed-value"), context.DeadlineExceeded))
	if strings.Contains(err.Error(), "abc123") || strings.Contains(err.Error(), "passed-value") || !strings.Contains(err.Error(), Placeholder) {
		t.Errorf("ScrubError: %q", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("ScrubError lost the wrapped error")
	}
	plain := errors.New("nothing secret")
	if s.ScrubError(plain) != plain {
		t.Error("an error without secrets was wrapped")
	}
	var none *Scrubber
	if none.Scrub("abc123") != "abc123" {
		t.Error("nil scrubber changed text")
	}
}

func TestCollect(t *testing.T) {
	var out []string
	Collect(map[string]any{"a": "public-value", "b": "secret-value", "c": []any{"xy", 123456.0}}, map[string]any{"b": true, "c": true}, &out)
	got := strings.Join(out, ",")
	for _, want := range []string{"secret-value", "123456"} {
		if !strings.Contains(got, want) {
			t.Errorf("Collect = %q, lacks %q", got, want)
		}
	}
	if strings.Contains(got, "public-value") || strings.Contains(got, "xy") {
		t.Errorf("Collect = %q: unmarked or too short values reported", got)
	}
}

func TestRedactValue(t *testing.T) {
	for _, tc := range []struct {
		name    string
		v, mask any
		want    string
	}{
		{"all", "x", true, `"(sensitive)"`},
		{"none", "x", false, `"x"`},
		{"nil mask", map[string]any{"a": "x"}, nil, `{"a":"x"}`},
		{"object part", map[string]any{"a": "x", "b": "y"}, map[string]any{"b": true}, `{"a":"x","b":"(sensitive)"}`},
		{"list part", []any{"x", "y"}, []any{false, true}, `["x","(sensitive)"]`},
		{"nested", map[string]any{"l": []any{map[string]any{"k": "s"}}}, map[string]any{"l": []any{map[string]any{"k": true}}}, `{"l":[{"k":"(sensitive)"}]}`},
		{"shape mismatch redacts whole", "x", map[string]any{"a": true}, `"(sensitive)"`},
		{"odd mask redacts whole", "x", "weird", `"(sensitive)"`},
		{"null stays null", nil, true, `null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(Redact(tc.v, tc.mask))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got %s, want %s", b, tc.want)
			}
		})
	}
}
