// The provider's place in a filesystem mirror, and the CLI configuration that installs it from there.

package mirror

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
)

// Source is the provider's source address. `source = "tfccm/lbhost"`
// means this address to OpenTofu and TerraformSource to Terraform; the
// mirror holds the provider under both.
const (
	Source          = "registry.opentofu.org/tfccm/lbhost"
	TerraformSource = "registry.terraform.io/tfccm/lbhost"
)

// BinaryPath is where the provider binary of version goes under root for
// source, in the unpacked layout OpenTofu and Terraform read:
// root/<source>/<version>/<os>_<arch>/terraform-provider-lbhost_v<version>.
func BinaryPath(root, source, version string) string {
	return filepath.Join(root, filepath.FromSlash(source), version, runtime.GOOS+"_"+runtime.GOARCH,
		"terraform-provider-lbhost_v"+version)
}

// CLIConfig is a CLI configuration installing tfccm/lbhost from the mirror
// at root (for OpenTofu and Terraform) and every other provider as usual.
func CLIConfig(root string) string {
	both := strconv.Quote(Source) + ", " + strconv.Quote(TerraformSource)
	return fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %s
    include = [%s]
  }
  direct {
    exclude = [%s]
  }
}
`, strconv.Quote(root), both, both)
}
