package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/tfccm/tfccm/internal/fsutil"
)

// Provider integrity (the cluster admin's side of the trust boundary):
// tofu checks every provider package against the checksums in the
// workspace's dependency lock file before it runs it. The engine never
// deletes a lock file to get past a mismatch: a package whose checksum
// does not match is refused, the workspace's runs fail with an Error
// naming the provider (Error.Provider; the controller's Warning Event
// TerraformProviderChecksumMismatch, its condition, and the metric
// tfccm_provider_checksum_mismatches_total), and they go on once the
// package matches again.
//
// Where the checksums come from: with Options.ProviderLockFile (the
// cloud config's terraform.provider_lock_file) every init starts from that
// file, written by the build beside the provider mirror it made
// (internal/providerlock; the image ships one for its mirror), so a
// workspace trusts exactly the packages the build put there, from its very
// first init. Without it, a workspace's first init records what it found
// (trust on first use) and later runs hold it to that.

// mismatchError is the Error of a command refused for a provider's
// checksum (Error.Provider), counted in the metric.
func mismatchError(op, provider, summary string) *Error {
	addr, _, _ := strings.Cut(provider, " ")
	providerChecksumMismatches.WithLabelValues(addr).Inc()
	return &Error{Op: op, Provider: provider, Summary: fmt.Sprintf(
		"provider %s does not match the checksums of the workspace's dependency lock file (its package changed after they were recorded); refusing to run it: %s",
		provider, summary)}
}

// readProviderLock reads and checks the pinned lock file: OpenTofu's
// dependency lock file syntax, with at least one provider block.
func readProviderLock(file string) ([]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("provider lock file: %w", err)
	}
	f, diags := hclparse.NewParser().ParseHCL(data, file)
	if diags.HasErrors() {
		return nil, fmt.Errorf("provider lock file: %s", diags.Error())
	}
	content, _, diags := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "provider", LabelNames: []string{"address"}}}})
	if diags.HasErrors() {
		return nil, fmt.Errorf("provider lock file: %s", diags.Error())
	}
	if len(content.Blocks) == 0 {
		return nil, fmt.Errorf("provider lock file %s locks no provider", file)
	}
	return data, nil
}

// pinLockFile writes the pinned lock file (Options.ProviderLockFile) as
// dir's lock file, replacing the one there, so that init starts from the
// admin's checksums. It reports whether there is a pinned lock file.
func (c *initCache) pinLockFile(dir string) (bool, error) {
	if c.pinned == nil {
		return false, nil
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, lockFile), c.pinned, 0o644); err != nil {
		return true, fmt.Errorf("write the pinned dependency lock file: %w", err)
	}
	return true, nil
}

// recordInitHash is what a workspace's record keeps of its last init:
// spec's init hash, and the pinned lock file's, so that a new one (a new
// image) runs init again from it.
func (c *initCache) recordInitHash(spec *Spec) string {
	h := spec.initHash()
	if c.pinned == nil {
		return h
	}
	s := sha256.Sum256(append([]byte(h+"\nprovider lock\n"), c.pinned...))
	return hex.EncodeToString(s[:])
}
