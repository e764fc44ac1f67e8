package workspace

import (
	"errors"
	"strings"

	"github.com/tfccm/tfccm/workspace/locks"
)

// maxMessage bounds a user-facing error so it fits a Kubernetes Event
// (whose message is truncated at 1 KiB).
const maxMessage = 600

// Error is a failed tofu operation as users see it.
type Error struct {
	// Op is the tofu command that failed.
	Op string
	// Summary is tofu's diagnostic summary and detail, shortened and
	// scrubbed; Message() is "<op>: <summary>".
	Summary string
	// LockHolder is set when the state lock is held by someone else.
	LockHolder string
	// Invalid is set when the template rejected its inputs (a variable's
	// validation or a precondition failed at plan time): the same inputs
	// can never succeed, so the engine does not retry them.
	Invalid bool
	// Reinit is set when tofu says the working directory's installed
	// providers or modules no longer match (a provider rebuilt or upgraded
	// in the mirror, a new module source): init must run again.
	Reinit bool
	// Provider is set when tofu refused a provider whose package does
	// not match the checksums of the dependency lock file: "ADDRESS
	// VERSION" (integrity.go). The lock file is kept; runs go on failing
	// until the package matches again.
	Provider string
	// Denied is set when the gate (policy) refused the plan: nothing is
	// retried until the work changes.
	Denied bool
	cause  error
	lock   locks.LockInfo // the held lock, when LockHolder is set
}

// invalidInputDiagnostics are the summaries of tofu/terraform errors that
// mean the inputs themselves are rejected by the template.
var invalidInputDiagnostics = []string{
	"Error: Invalid value for variable",
	"Error: Invalid value for input variable",
	"Error: Resource precondition failed",
	"Error: Module output value precondition failed",
}

// reinitDiagnostics are tofu/terraform errors that `init` repairs.
// A checksum mismatch is one when the installed copy is stale and the
// package it came from matches: init installs it again, keeping the lock
// file; if the package itself does not match, init refuses it
// (integrity.go).
var reinitDiagnostics = []string{
	"does not match any of the checksums recorded in the dependency lock file",
	"checksums previously recorded in the dependency lock file",
	"Inconsistent dependency lock file",
	"Required plugins are not installed",
	"Module not installed",
	"Backend initialization required",
}

// needsReinit reports whether a failed step's stderr says the working
// directory must be initialized again.
func needsReinit(stderr string) bool {
	// tofu wraps long diagnostics: compare with the line breaks taken out.
	flat := strings.Join(strings.Fields(stderr), " ")
	for _, d := range reinitDiagnostics {
		if strings.Contains(flat, d) {
			return true
		}
	}
	return false
}

// invalidInput reports whether a failed plan's stderr says the template
// rejected its inputs.
func invalidInput(stderr string) bool {
	for _, d := range invalidInputDiagnostics {
		if strings.Contains(stderr, d) {
			return true
		}
	}
	return false
}

// IsInvalidInput reports whether err is a failure of the inputs
// themselves (Error.Invalid), which is not retried until they change.
func IsInvalidInput(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Invalid
}

func (e *Error) Error() string { return e.Op + ": " + e.Summary }

// Unwrap exposes context errors (timeouts, cancellation); the raw tofu
// error is not kept because it may carry secrets.
func (e *Error) Unwrap() error { return e.cause }

// ErrLocked is matched (errors.Is) by errors caused by a state lock held by
// someone else.
var ErrLocked = errors.New("state locked by another process")

// Is makes errors.Is(err, ErrLocked) work.
func (e *Error) Is(target error) bool { return target == ErrLocked && e.LockHolder != "" }

// summarize turns tofu's plain-text (-no-color) stderr into a short
// diagnostic: every "Error: <summary>" with the first paragraph of its
// detail, source snippets dropped.
func summarize(stderr string) string {
	lines := strings.Split(strings.ReplaceAll(stderr, "\r\n", "\n"), "\n")
	var parts []string
	for i := 0; i < len(lines); i++ {
		l := strings.TrimLeft(lines[i], "│╷╵ ")
		if !strings.HasPrefix(l, "Error: ") {
			continue
		}
		summary := strings.TrimSpace(strings.TrimPrefix(l, "Error: "))
		var where, detail []string
		j := i + 1
		for ; j < len(lines); j++ {
			raw := lines[j]
			if strings.HasPrefix(raw, "│") {
				raw = strings.TrimPrefix(strings.TrimPrefix(raw, "│"), " ")
			}
			raw = strings.TrimLeft(raw, "╷╵")
			t := strings.TrimSpace(raw)
			if strings.HasPrefix(t, "Error: ") || strings.HasPrefix(t, "Warning: ") {
				break
			}
			if t == "" {
				if len(detail) > 0 {
					break
				}
				continue
			}
			if strings.HasPrefix(raw, " ") {
				// source location and snippet lines are indented
				if strings.HasPrefix(t, "on ") && len(where) == 0 {
					where = append(where, strings.TrimSuffix(strings.SplitN(t, ",", 2)[0], ":"))
				}
				continue
			}
			detail = append(detail, t)
		}
		i = j - 1
		msg := summary
		if len(detail) > 0 {
			msg += ": " + strings.Join(detail, " ")
		}
		if len(where) > 0 {
			msg += " (" + where[0] + ")"
		}
		parts = append(parts, msg)
	}
	if len(parts) == 0 {
		// Not a diagnostic (crash, exec failure): last non-empty lines.
		var tail []string
		for i := len(lines) - 1; i >= 0 && len(tail) < 3; i-- {
			if t := strings.TrimSpace(lines[i]); t != "" {
				tail = append([]string{t}, tail...)
			}
		}
		parts = append(parts, strings.Join(tail, " "))
	}
	return shorten(strings.Join(parts, "; "), maxMessage)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && (s[cut]&0xC0) == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + "..."
}
