package tofu

import (
	"errors"

	"github.com/tfccm/tfccm/workspace/locks"
)

// The error type of a failed tofu command, as users see it, and the
// questions callers ask of it.

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

// WithCause records what interrupted the operation or made it fail
// (a context error, a state change), for errors.Is and errors.As; never
// tofu's raw output, which may carry secrets.
func (e *Error) WithCause(cause error) *Error {
	e.cause = cause
	return e
}

// Locked is the Error of an operation refused because holder holds the
// state lock li.
func Locked(op, summary, holder string, li locks.LockInfo) *Error {
	return &Error{Op: op, Summary: summary, LockHolder: holder, lock: li}
}

// HeldLock is the state lock held by someone else, when LockHolder is set.
func (e *Error) HeldLock() locks.LockInfo { return e.lock }

// ProviderMismatch returns the provider ("ADDRESS VERSION") whose package
// did not match its locked checksums in err, "" if err is not such a
// failure.
func ProviderMismatch(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Provider
	}
	return ""
}
