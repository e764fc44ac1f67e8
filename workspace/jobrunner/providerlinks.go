package jobrunner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// A workspace's providers in a runner pod without a tofu process.
//
// Providers do not travel (pack.go): every command but init needs them
// linked into .terraform/providers from the pod's plugin cache, and
// `tofu init -backend=false` does that, but it also reads the workspace's
// state through its backend (for the providers the state needs). With the
// kubernetes backend that lists every state Secret of the namespace, so a
// linking init cost O(workspaces) per command: 8.56 s each at 200 load
// balancers on the runner bench, 48 s of a Service's 63 s of pod time.
//
// So after an init the pod records what tofu linked: the plugin cache
// entries (host/namespace/type/version/os_arch) and the checksum of the
// dependency lock file it linked them for. The record travels with the
// workspace (.terraform is carried). The next command's pod makes the
// same links itself when the lock file is unchanged and every entry is in
// its own cache; tofu still checks each linked package against the lock
// file's checksums when it loads it. Anything else (no record, another
// lock file, an entry missing from this pod's cache, a provider tofu
// copied instead of linking) falls back to the linking init.

// providerLinksFile is the record, relative to the workspace.
const providerLinksFile = ".terraform/tfccm-provider-links.json"

// lockFile is tofu's dependency lock file in a workspace.
const lockFile = ".terraform.lock.hcl"

// providersDir is where tofu installs a workspace's providers.
const providersDir = ".terraform/providers"

// providerLinks is the record: what .terraform/providers linked from the
// plugin cache after an init, for which lock file.
type providerLinks struct {
	// Lock is the hex SHA-256 of .terraform.lock.hcl; "" (and no links)
	// records a module without providers: no lock file after its init.
	Lock string `json:"lock"`
	// Links are the installed packages, each a slash path
	// host/namespace/type/version/os_arch under the cache and under
	// .terraform/providers alike; none when init installed nothing.
	Links []string `json:"links"`
}

// providerPathDepth is the number of elements of a package's path.
const providerPathDepth = 5

// providerElem is one element of a package's path: a host name (with a
// port), a namespace, a type, a version or a platform.
var providerElem = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:+-]*$`)

// validLink reports whether rel is a package path a record may name.
func validLink(rel string) bool {
	if path.Clean(rel) != rel || path.IsAbs(rel) {
		return false
	}
	parts := strings.Split(rel, "/")
	if len(parts) != providerPathDepth {
		return false
	}
	for _, p := range parts {
		if !providerElem.MatchString(p) || strings.Contains(p, "..") {
			return false
		}
	}
	return true
}

// lockSum is the hex SHA-256 of dir's dependency lock file.
func lockSum(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, lockFile))
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// recordProviderLinks writes dir's record after an init: the packages
// under .terraform/providers when each is tofu's link to its entry in
// cache, or none for a module without providers (nothing installed, with
// or without a lock file: the engine pins the image's lock file into
// every workspace, the catalog's too, and tofu leaves the entries its
// configuration does not use). Otherwise (a copied package, a link
// elsewhere) it removes any record, so that the next command runs the
// linking init.
func recordProviderLinks(dir, cache string) error {
	rec, err := installedLinks(dir, cache)
	file := filepath.Join(dir, filepath.FromSlash(providerLinksFile))
	if err != nil || rec == nil {
		if rerr := os.Remove(file); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return rerr
		}
		return err
	}
	if _, err := os.Stat(filepath.Dir(file)); errors.Is(err, fs.ErrNotExist) && len(rec.Links) == 0 {
		return nil // no .terraform: not initialized, nothing to link before a command
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o600)
}

// installedLinks reads .terraform/providers of dir: nil (and no error)
// when a package there is not a link into cache or there is nothing to
// record.
func installedLinks(dir, cache string) (*providerLinks, error) {
	sum, err := lockSum(dir)
	if errors.Is(err, fs.ErrNotExist) {
		// No lock file after an init: the module needs no provider (the
		// engine's catalog). Recorded as such when nothing is installed.
		if _, serr := os.Lstat(filepath.Join(dir, filepath.FromSlash(providersDir))); errors.Is(serr, fs.ErrNotExist) {
			return &providerLinks{}, nil
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	absCache, err := filepath.Abs(cache)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, filepath.FromSlash(providersDir))
	rec := &providerLinks{Lock: sum}
	copied := false
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		depth := strings.Count(rel, "/") + 1
		switch {
		case rel == ".":
			return nil
		case depth < providerPathDepth:
			if !d.IsDir() {
				copied = true
			}
			return nil
		case depth > providerPathDepth:
			return filepath.SkipDir
		}
		target, lerr := os.Readlink(p)
		if lerr != nil || !validLink(rel) || filepath.Clean(target) != filepath.Join(absCache, filepath.FromSlash(rel)) {
			copied = true
			return filepath.SkipDir
		}
		rec.Links = append(rec.Links, rel)
		return nil
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Nothing installed: init found no provider the configuration
		// requires, whatever the lock file lists.
		return rec, nil
	case err != nil:
		return nil, err
	case copied:
		return nil, nil
	}
	slices.Sort(rec.Links)
	return rec, nil
}

// linkProviders makes dir's provider links from its record when the
// record fits: the lock file it was made for, every package in cache. It
// reports whether it did; false leaves .terraform/providers as it was
// (the caller runs the linking init).
func linkProviders(dir, cache string) bool {
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(providerLinksFile)))
	if err != nil {
		return false
	}
	var rec providerLinks
	if json.Unmarshal(b, &rec) != nil {
		return false
	}
	if rec.Lock == "" {
		// A module without providers: still none (no lock file, nothing
		// to link).
		_, err := os.Lstat(filepath.Join(dir, lockFile))
		return len(rec.Links) == 0 && errors.Is(err, fs.ErrNotExist)
	}
	if sum, err := lockSum(dir); err != nil || sum != rec.Lock {
		return false
	}
	absCache, err := filepath.Abs(cache)
	if err != nil {
		return false
	}
	root := filepath.Join(dir, filepath.FromSlash(providersDir))
	if _, err := os.Lstat(root); err == nil {
		// Something installed already: leave it to tofu.
		return false
	}
	for _, rel := range rec.Links {
		if !validLink(rel) {
			return false
		}
		if st, err := os.Stat(filepath.Join(absCache, filepath.FromSlash(rel))); err != nil || !st.IsDir() {
			return false
		}
	}
	for _, rel := range rec.Links {
		link := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err == nil {
			err = os.Symlink(filepath.Join(absCache, filepath.FromSlash(rel)), link)
		}
		if err != nil {
			_ = os.RemoveAll(root)
			return false
		}
	}
	return true
}
