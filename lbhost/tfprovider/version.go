// The provider's version.

package tfprovider

import "github.com/tfccm/tfccm/lbhost/mirror"

// Version is the provider's version (kept in package mirror, which knows
// where each version is installed).
const Version = mirror.Version
