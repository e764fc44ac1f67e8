// Package mirror knows where the lbhost provider lives in a filesystem
// mirror and writes the CLI configuration that makes OpenTofu (or
// Terraform) install it from there and never from the network.
package mirror

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
)

// Source is the provider's source address.
const Source = "registry.opentofu.org/tfccm/lbhost"

// BinaryPath is where the provider binary of version goes under root, in
// the unpacked layout OpenTofu reads:
// root/registry.opentofu.org/tfccm/lbhost/<version>/<os>_<arch>/terraform-provider-lbhost_v<version>.
func BinaryPath(root, version string) string {
	return filepath.Join(root, filepath.FromSlash(Source), version, runtime.GOOS+"_"+runtime.GOARCH,
		"terraform-provider-lbhost_v"+version)
}

// CLIConfig is a CLI configuration installing tfccm/lbhost from the mirror
// at root and every other provider as usual.
func CLIConfig(root string) string {
	return fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %s
    include = [%s]
  }
  direct {
    exclude = [%s]
  }
}
`, strconv.Quote(root), strconv.Quote(Source), strconv.Quote(Source))
}
