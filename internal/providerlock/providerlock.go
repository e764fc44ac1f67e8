// Package providerlock writes an OpenTofu dependency lock file for every
// provider in a filesystem mirror (the cluster admin's side of the trust
// boundary): the checksums tofu verifies a provider package against before
// it runs it. The build writes one beside each mirror it makes (make
// build: bin/providers.lock.hcl; the image: beside its mirror), from the
// packages it just built or was given, and the workspace engine starts
// every init from it (terraform.provider_lock_file), so a package changed
// after the build is refused rather than trusted on first use.
//
// The hashes are OpenTofu's own: "h1:" (golang.org/x/mod's dirhash Hash1
// over the unpacked package, or over a packed archive's files) and, for
// a packed archive, "zh:" (the archive's SHA-256), as `tofu providers
// lock -fs-mirror` records them.
package providerlock

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"
)

// Provider is one provider's entry in a lock file.
type Provider struct {
	// Address is HOST/NAMESPACE/TYPE.
	Address string
	Version string
	// Hashes are sorted, one or two per platform package.
	Hashes []string
}

// packed is a packed mirror's archive name:
// terraform-provider-TYPE_VERSION_OS_ARCH.zip.
var packed = regexp.MustCompile(`^terraform-provider-([^_]+)_([^_]+)_([a-z0-9]+_[a-z0-9]+)\.zip$`)

// platform is an unpacked package's directory name: OS_ARCH.
var platform = regexp.MustCompile(`^[a-z0-9]+_[a-z0-9]+$`)

// Mirror reads the providers in the filesystem mirror dir (packed or
// unpacked layout, both as OpenTofu reads them). A provider with several
// versions in the mirror is locked at its newest (a lock file holds one
// version per provider).
func Mirror(dir string) ([]Provider, error) {
	versions := map[string]map[string][]string{} // address -> version -> hashes
	add := func(addr, version string, hashes ...string) {
		if versions[addr] == nil {
			versions[addr] = map[string][]string{}
		}
		versions[addr][version] = append(versions[addr][version], hashes...)
	}
	hosts, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("provider mirror: %w", err)
	}
	for _, h := range hosts {
		for _, ns := range subdirs(filepath.Join(dir, h.Name())) {
			for _, ty := range subdirs(filepath.Join(dir, h.Name(), ns)) {
				addr := h.Name() + "/" + ns + "/" + ty
				tdir := filepath.Join(dir, h.Name(), ns, ty)
				entries, _ := os.ReadDir(tdir)
				for _, e := range entries {
					p := filepath.Join(tdir, e.Name())
					if m := packed.FindStringSubmatch(e.Name()); m != nil && m[1] == ty {
						h1, zh, err := archiveHashes(p)
						if err != nil {
							return nil, fmt.Errorf("provider mirror: %s: %w", p, err)
						}
						add(addr, m[2], h1, zh)
						continue
					}
					if !isDir(p) {
						continue
					}
					for _, plat := range subdirs(p) {
						if !platform.MatchString(plat) {
							continue
						}
						h1, err := dirHash(filepath.Join(p, plat))
						if err != nil {
							return nil, fmt.Errorf("provider mirror: %s: %w", filepath.Join(p, plat), err)
						}
						add(addr, e.Name(), h1)
					}
				}
			}
		}
	}
	var out []Provider
	for addr, vs := range versions {
		newest := ""
		for v := range vs {
			if newest == "" || semver.Compare("v"+v, "v"+newest) > 0 {
				newest = v
			}
		}
		hashes := vs[newest]
		sort.Strings(hashes)
		out = append(out, Provider{Address: addr, Version: newest, Hashes: hashes})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("provider mirror %s holds no provider", dir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, nil
}

// File is the dependency lock file of providers, as OpenTofu writes it.
func File(providers []Provider) []byte {
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	for i, p := range providers {
		if i > 0 {
			body.AppendNewline()
		}
		b := body.AppendNewBlock("provider", []string{p.Address}).Body()
		b.SetAttributeValue("version", cty.StringVal(p.Version))
		toks := hclwrite.Tokens{&hclwrite.Token{Type: hclsyntax.TokenOBrack, Bytes: []byte("[")}, &hclwrite.Token{Type: hclsyntax.TokenNewline, Bytes: []byte("\n")}}
		for _, h := range p.Hashes {
			toks = append(toks, hclwrite.TokensForValue(cty.StringVal(h))...)
			toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenComma, Bytes: []byte(",")}, &hclwrite.Token{Type: hclsyntax.TokenNewline, Bytes: []byte("\n")})
		}
		toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenCBrack, Bytes: []byte("]")})
		b.SetAttributeRaw("hashes", toks)
	}
	header := "# The checksums of every provider in the mirror beside this file, written\n" +
		"# by the build that made the mirror (tfccm internal/providerlock). tfccm\n" +
		"# starts every workspace's tofu init from it (terraform.provider_lock_file).\n"
	return append([]byte(header), hclwrite.Format(f.Bytes())...)
}

// WriteMirrorLock writes the lock file of the mirror dir to file.
func WriteMirrorLock(dir, file string) error {
	ps, err := Mirror(dir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, File(ps), 0o644); err != nil {
		return fmt.Errorf("provider lock file: %w", err)
	}
	return nil
}

// dirHash is OpenTofu's h1 hash of an unpacked package directory (its
// symlinks resolved first, as tofu does).
func dirHash(dir string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	return dirhash.HashDir(real, "", dirhash.Hash1)
}

// archiveHashes are a packed package's h1 hash (of the files in it) and
// zh hash (of the archive).
func archiveHashes(file string) (string, string, error) {
	h1, err := dirhash.HashZip(file, dirhash.Hash1)
	if err != nil {
		return "", "", err
	}
	f, err := os.Open(file)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	s := sha256.New()
	if _, err := io.Copy(s, f); err != nil {
		return "", "", err
	}
	return h1, "zh:" + hex.EncodeToString(s.Sum(nil)), nil
}

func subdirs(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if isDir(filepath.Join(dir, e.Name())) {
			out = append(out, e.Name())
		}
	}
	return out
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
