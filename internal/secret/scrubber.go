package secret

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
)

// Placeholder replaces every secret value tfccm removes from text or
// redacts from a value.
const Placeholder = "(sensitive)"

// PlaceholderJSON is Placeholder as a JSON string, for redacted JSON values
// (sensitive outputs).
var PlaceholderJSON = json.RawMessage(`"` + Placeholder + `"`)

// Scrubber removes known secret values from text. The zero value removes
// nothing. A Scrubber is immutable and safe for concurrent use.
type Scrubber struct {
	secrets []string // longest first, so overlapping values are removed whole
}

// NewScrubber returns a Scrubber for every non-empty value of values
// (surrounding whitespace trimmed).
func NewScrubber(values ...[]string) *Scrubber {
	seen := map[string]bool{}
	var s Scrubber
	for _, vs := range values {
		for _, v := range vs {
			v = strings.TrimSpace(v)
			if v == "" || seen[v] {
				continue
			}
			seen[v] = true
			s.secrets = append(s.secrets, v)
		}
	}
	sort.Slice(s.secrets, func(i, j int) bool { return len(s.secrets[i]) > len(s.secrets[j]) })
	return &s
}

// With returns a Scrubber that also removes extra values.
func (s *Scrubber) With(extra []string) *Scrubber {
	if len(extra) == 0 {
		return s
	}
	var own []string
	if s != nil {
		own = s.secrets
	}
	return NewScrubber(own, extra)
}

// Scrub replaces every secret value in text with Placeholder.
func (s *Scrubber) Scrub(text string) string {
	if s == nil {
		return text
	}
	for _, v := range s.secrets {
		text = strings.ReplaceAll(text, v, Placeholder)
	}
	return text
}

// ScrubError returns err with its message scrubbed; errors.Is still sees
// through it (for context errors). err is returned as is when its message
// holds no secret.
func (s *Scrubber) ScrubError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := s.Scrub(msg); red != msg {
		return &scrubbedError{msg: red, err: err}
	}
	return err
}

// scrubbedError shows only the scrubbed message; the original error (which
// may carry the secret) is reachable only through errors.Is.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }

func (e *scrubbedError) Is(target error) bool { return errors.Is(e.err, target) }
