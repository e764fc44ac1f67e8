package workspace

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// The names of package tofu that callers outside use through workspace
// (the error of a failed tofu operation and its questions, the
// credentials declaration): package tofu owns them.

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

// CredentialsFile is the name of a module's declaration of the
// credentials its workspaces receive (package tofu).
const CredentialsFile = tofu.CredentialsFile

// ParseCredentials returns the names a CredentialsFile declares (package
// tofu).
func ParseCredentials(data []byte, filename string) ([]string, hcl.Diagnostics) {
	return tofu.ParseCredentials(data, filename)
}
