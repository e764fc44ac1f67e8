package workspace

import "github.com/tfccm/tfccm/workspace/tofu"

// The error of a failed tofu operation, as callers outside see it: the
// type and its questions are package tofu's; these names keep theirs.

// Error is a failed tofu operation as users see it (package tofu).
type Error = tofu.Error

// ErrLocked is matched (errors.Is) by errors caused by a state lock held by
// someone else.
var ErrLocked = tofu.ErrLocked

// IsInvalidInput reports whether err is a failure of the inputs
// themselves (Error.Invalid), which is not retried until they change.
func IsInvalidInput(err error) bool { return tofu.IsInvalidInput(err) }

// ProviderMismatch returns the provider ("ADDRESS VERSION") whose package
// did not match its locked checksums in err, "" if err is not such a
// failure.
func ProviderMismatch(err error) string { return tofu.ProviderMismatch(err) }
