package tofu

import (
	"regexp"
	"strings"
)

// Diagnostics: what a failed command's output says (the summary users
// see, whether init must run again, whether the inputs were rejected, which
// provider a checksum refused) and the bounded text logged for it.

// MaxMessage bounds a user-facing error so it fits a Kubernetes Event
// (whose message is truncated at 1 KiB).
const MaxMessage = 600

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

// NeedsReinit reports whether a failed step's stderr says the working
// directory must be initialized again.
func NeedsReinit(stderr string) bool {
	// tofu wraps long diagnostics: compare with the line breaks taken out.
	flat := strings.Join(strings.Fields(stderr), " ")
	for _, d := range reinitDiagnostics {
		if strings.Contains(flat, d) {
			return true
		}
	}
	return false
}

// InvalidInput reports whether a failed plan's stderr says the template
// rejected its inputs.
func InvalidInput(stderr string) bool {
	for _, d := range invalidInputDiagnostics {
		if strings.Contains(stderr, d) {
			return true
		}
	}
	return false
}

// Summarize turns tofu's plain-text (-no-color) stderr into a short
// diagnostic: every "Error: <summary>" with the first paragraph of its
// detail, source snippets dropped.
func Summarize(stderr string) string {
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
	return shorten(strings.Join(parts, "; "), MaxMessage)
}

// shorten cuts s to at most n bytes, marking the cut.
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

// providerMismatchRE finds the provider tofu refused for a checksum
// mismatch, in its init ("the local package for ADDR VERSION doesn't
// match any of the checksums previously recorded") and plan/apply ("the
// cached package for ADDR VERSION (in .terraform/providers) does not
// match any of the checksums recorded") errors, flattened.
var providerMismatchRE = regexp.MustCompile(`package for ([A-Za-z0-9._-]+/[A-Za-z0-9_-]+/[A-Za-z0-9_-]+) v?([0-9][^ ]*)(?: \([^)]*\))? (?:does not|doesn't) match any of the checksums`)

// MismatchedProvider returns the provider (address and version) a failed
// command's stderr says does not match its locked checksums, "" if none.
func MismatchedProvider(stderr string) string {
	flat := strings.Join(strings.Fields(stderr), " ")
	m := providerMismatchRE.FindStringSubmatch(flat)
	if m == nil {
		return ""
	}
	return m[1] + " " + m[2]
}

// maxLoggedOutput bounds the tofu output logged for one failed command.
const maxLoggedOutput = 16 << 10

// LogLines is a failed command's output for the log: blank lines dropped,
// at most maxLoggedOutput bytes (the end is kept: the errors are there).
func LogLines(text string) string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimRight(l, " \t\r"))
		}
	}
	out := strings.Join(lines, "\n")
	if len(out) > maxLoggedOutput {
		out = "(truncated) ..." + strings.ToValidUTF8(out[len(out)-maxLoggedOutput:], "")
	}
	return out
}
