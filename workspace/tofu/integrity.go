package tofu

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
// Where the checksums come from: with the pinned lock file (the
// cloud config's terraform.provider_lock_file) every init starts from that
// file, written by the build beside the provider mirror it made
// (internal/providerlock; the image ships one for its mirror), so a
// workspace trusts exactly the packages the build put there, from its very
// first init. Without it, a workspace's first init records what it found
// (trust on first use) and later runs hold it to that.

// MismatchError is the Error of a command refused for a provider's
// checksum (Error.Provider), counted in the metrics.
func (t *Setup) MismatchError(op, provider, summary string) *Error {
	addr, _, _ := strings.Cut(provider, " ")
	if t.Metrics != nil {
		t.Metrics.ChecksumMismatch(addr)
	}
	return &Error{Op: op, Provider: provider, Summary: fmt.Sprintf(
		"provider %s does not match the checksums of the workspace's dependency lock file (its package changed after they were recorded); refusing to run it: %s",
		provider, summary)}
}

// ReadProviderLock reads and checks the pinned lock file: OpenTofu's
// dependency lock file syntax, with at least one provider block.
func ReadProviderLock(file string) ([]byte, error) {
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

// PinLockFile writes the pinned lock file (the pinned lock file) as
// dir's lock file, replacing the one there, so that init starts from the
// admin's checksums. It reports whether there is a pinned lock file.
func (c *InitCache) PinLockFile(dir string) (bool, error) {
	if c.pinned == nil {
		return false, nil
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, LockFile), c.pinned, 0o644); err != nil {
		return true, fmt.Errorf("write the pinned dependency lock file: %w", err)
	}
	return true, nil
}

// RecordInitHash is what a workspace's record keeps of its last init:
// its spec's init hash h, and the pinned lock file's, so that a new one
// (a new image) runs init again from it.
func (c *InitCache) RecordInitHash(h string) string {
	if c.pinned == nil {
		return h
	}
	s := sha256.Sum256(append([]byte(h+"\nprovider lock\n"), c.pinned...))
	return hex.EncodeToString(s[:])
}
