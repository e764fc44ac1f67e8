package tofu

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/internal/fsutil"
)

// What init produces that workspaces of one template share: the
// dependency lock file, kept per provider set. A new workspace's init
// starts from the lock file an earlier init of the same template wrote.
// With a plugin cache (terraform.plugin_cache_dir), tofu then links the
// providers it names from the cache instead of checking and unpacking the
// mirror's archive again (a packed mirror, `tofu providers mirror`, is
// what images carry). The backend's settings stay per workspace: init
// still runs, and writes .terraform/terraform.tfstate with this
// workspace's state key.
//
// The engine turns no plugin cache on by itself: with one, a burst of 200
// new workspaces (OpenTofu 1.12, an unpacked mirror) saw plans fail
// because a cached provider directory was missing while other workspaces
// ran init.
//
// tofu remains the judge of the lock file: a seeded lock file that no
// longer fits (a changed constraint) fails init, which is then run again
// without it and the shared copy dropped; one a provider's package does
// not match is kept and the package refused (integrity.go). With a pinned
// lock file (Options.ProviderLockFile) every init starts from that
// instead, and the key includes it.
// A shared copy whose checksum does not match is dropped unread, and a new
// incarnation (maybe a new image, with another mirror) starts with none.

// InitCache is what the inits of all workspaces share: the lock files
// per provider set (this file), the pinned lock file (integrity.go) and
// the prepared .terraform directories (prepared.go), under workDir.
type InitCache struct {
	binary, cliConfig, workDir string
	// pinned is the pinned lock file's content (integrity.go).
	pinned []byte
}

// NewInitCache is the init cache under workDir for binary with its CLI
// configuration and the pinned lock file's content (nil: none,
// ReadProviderLock).
func NewInitCache(binary, cliConfig, workDir string, pinned []byte) *InitCache {
	return &InitCache{binary: binary, cliConfig: cliConfig, workDir: workDir, pinned: pinned}
}

// initCacheDir holds the shared lock files: <work dir>/.init-cache/<key>/.
const initCacheDir = ".init-cache"

// LockFile is OpenTofu's dependency lock file in a workspace.
const LockFile = ".terraform.lock.hcl"

// Files of a shared lock file's entry.
const (
	CachedLock    = "lock.hcl"
	CachedLockSum = "lock.hcl.sha256"
)

// Key names the provider set of a spec: every file but the
// inputs (*.tfvars) and the files tfccm generates per workspace (tfccm_*
// at the top: the backend block), with the tofu binary and CLI config
// that resolve them. Workspaces rendered from one template share it.
func (c *InitCache) Key(spec *DirSpec) string {
	h := c.initKeyHash("workspace")
	for _, p := range slices.Sorted(maps.Keys(spec.Files)) {
		if IsVarFile(p) || (!strings.Contains(p, "/") && strings.HasPrefix(path.Base(p), "tfccm_")) {
			continue
		}
		fmt.Fprintf(h, "file %q %o %d\n", p, spec.Mode(p), len(spec.Files[p]))
		h.Write(spec.Files[p])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ProbeKey names the provider set of a probe's copy in dir: its module's
// regular files (not the linked inputs, not tofu's dot files, not the
// local state stateFile and its backup). Copies of one template's module
// share it.
func (c *InitCache) ProbeKey(dir, stateFile string) (string, error) {
	h := c.initKeyHash("probe")
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || d.Name() == stateFile || d.Name() == stateFile+".backup" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "file %q %d\n", filepath.ToSlash(rel), len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// initKeyHash starts a key: what resolves providers (the binary and its
// CLI configuration) for a kind of directory.
func (c *InitCache) initKeyHash(kind string) hash.Hash {
	h := sha256.New()
	fmt.Fprintf(h, "tfccm init cache v2 %s\nbinary %q\ncli-config %q\n", kind, c.binary, c.cliConfig)
	if c.cliConfig != "" {
		if b, err := os.ReadFile(c.cliConfig); err == nil {
			h.Write(b)
		}
	}
	fmt.Fprintf(h, "provider lock %d\n", len(c.pinned))
	h.Write(c.pinned)
	return h
}

// Entry is the directory of key's shared lock file.
func (c *InitCache) Entry(key string) string {
	return filepath.Join(c.workDir, initCacheDir, key)
}

// SeedLockFile copies the shared lock file of key into dir when dir has
// none yet. It reports whether it did.
func (c *InitCache) SeedLockFile(dir, key string) bool {
	if exists(filepath.Join(dir, LockFile)) {
		return false
	}
	lock, ok := c.readCachedLock(key)
	if !ok {
		return false
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, LockFile), lock, 0o644); err != nil {
		klog.InfoS("Could not copy the shared dependency lock file; init resolves providers itself", "workspace", filepath.Base(dir), "err", err)
		return false
	}
	return true
}

// readCachedLock returns key's shared lock file if it is intact; one
// whose checksum does not match (a torn or edited copy) is removed.
func (c *InitCache) readCachedLock(key string) ([]byte, bool) {
	entry := c.Entry(key)
	lock, err := os.ReadFile(filepath.Join(entry, CachedLock))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	sum, serr := os.ReadFile(filepath.Join(entry, CachedLockSum))
	if err != nil || serr != nil || strings.TrimSpace(string(sum)) != lockSum(lock) {
		klog.InfoS("Shared dependency lock file is damaged; removing it (the next init writes it again)", "entry", entry)
		c.dropCachedLock(key)
		return nil, false
	}
	return lock, true
}

// KeepLockFile shares dir's lock file, written by a successful init, under
// key (unless that copy is already there).
func (c *InitCache) KeepLockFile(dir, key string) {
	lock, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil || len(lock) == 0 {
		return // no providers, or none recorded
	}
	entry := c.Entry(key)
	if old, err := os.ReadFile(filepath.Join(entry, CachedLock)); err == nil && bytes.Equal(old, lock) {
		return
	}
	if err := os.MkdirAll(entry, 0o700); err != nil {
		klog.InfoS("Could not share the dependency lock file", "workspace", filepath.Base(dir), "err", err)
		return
	}
	// The checksum is written last: a reader sees either no entry, the
	// old one (checksum mismatch: dropped) or the new one.
	_ = os.Remove(filepath.Join(entry, CachedLockSum))
	if err := fsutil.WriteFileAtomic(filepath.Join(entry, CachedLock), lock, 0o600); err != nil {
		klog.InfoS("Could not share the dependency lock file", "workspace", filepath.Base(dir), "err", err)
		return
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(entry, CachedLockSum), []byte(lockSum(lock)+"\n"), 0o600); err != nil {
		klog.InfoS("Could not share the dependency lock file", "workspace", filepath.Base(dir), "err", err)
	}
}

// dropCachedLock removes key's shared lock file.
func (c *InitCache) dropCachedLock(key string) {
	if err := os.RemoveAll(c.Entry(key)); err != nil {
		klog.InfoS("Could not remove a shared dependency lock file", "key", key, "err", err)
	}
}

func lockSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Drop removes every shared lock file (and prepared .terraform).
func (c *InitCache) Drop() {
	if err := os.RemoveAll(filepath.Join(c.workDir, initCacheDir)); err != nil {
		klog.InfoS("Could not remove the shared dependency lock files", "err", err)
	}
}

// IsVarFile reports whether p is a variable file (inputs, not module).
func IsVarFile(p string) bool {
	return strings.HasSuffix(p, ".tfvars") || strings.HasSuffix(p, ".tfvars.json")
}

// Mode is the mode of file p (FileMode).
func (s *DirSpec) Mode(p string) fs.FileMode { return FileMode(s.Modes, p) }

// FileMode is the mode of a workspace's file p: 0o644 unless modes gives
// one.
func FileMode(modes map[string]fs.FileMode, p string) fs.FileMode {
	if m, ok := modes[p]; ok {
		return m
	}
	return 0o644
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
