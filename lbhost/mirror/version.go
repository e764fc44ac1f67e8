// The lbhost provider's version.

package mirror

// Version is the provider's version: the directory it is installed under
// in the filesystem mirror and what `tofu version` reports for it.
const Version = "0.1.0"
