// Package secret is tfccm's one way of keeping secrets out of what it shows.
// It owns a Scrubber that removes known secret values from text (messages,
// Events, published plans), one Placeholder for every value removed or
// redacted, and a walker over JSON-shaped values that finds the sensitive
// parts (Strings, Collect) or masks them (Redact). The engine, review mode
// and the state sources all use it, so a secret looks the same everywhere.
package secret
