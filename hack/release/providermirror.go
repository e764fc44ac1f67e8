package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	"github.com/tfccm/tfccm/lbhost/mirror"
)

// The provider network mirror protocol's documents
// (https://opentofu.org/docs/internals/provider-network-mirror-protocol/).
type (
	mirrorIndex struct {
		Versions map[string]struct{} `json:"versions"`
	}
	mirrorVersion struct {
		Archives map[string]mirrorArchive `json:"archives"`
	}
	mirrorArchive struct {
		URL    string   `json:"url"`
		Hashes []string `json:"hashes"`
	}
)

// writeProviderMirror writes the lbhost provider of version, one binary per
// platform, as a provider mirror under root that serves both ways:
//
//   - a network mirror (static files behind any HTTPS server):
//     root/registry.opentofu.org/tfccm/lbhost/{index.json,VERSION.json} and
//     the same two under registry.terraform.io (for Terraform), naming
//   - the zips, in the packed layout a filesystem mirror reads:
//     root/registry.opentofu.org/tfccm/lbhost/terraform-provider-lbhost_VERSION_OS_ARCH.zip
//
// Each zip holds terraform-provider-lbhost_vVERSION; VERSION.json lists its
// zh: hash (SHA-256 of the zip), which `tofu init` checks and records in
// the lock file.
func writeProviderMirror(root, version string, bins map[platform]string, mtime time.Time) error {
	tofuDir := filepath.Join(root, filepath.FromSlash(mirror.Source))
	if err := os.MkdirAll(tofuDir, 0o755); err != nil {
		return err
	}
	var plats []platform
	for p := range bins {
		plats = append(plats, p)
	}
	sort.Slice(plats, func(i, j int) bool { return plats[i].dir() < plats[j].dir() })
	archives := map[string]mirrorArchive{}
	for _, p := range plats {
		zipName := fmt.Sprintf("%s_%s_%s.zip", providerBinary, version, p.dir())
		zipPath := filepath.Join(tofuDir, zipName)
		err := writeZip(zipPath, []member{{name: providerBinary + "_v" + version, src: bins[p], exec: true}}, mtime)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(zipPath)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		archives[p.dir()] = mirrorArchive{URL: zipName, Hashes: []string{"zh:" + hex.EncodeToString(sum[:])}}
	}
	index := mirrorIndex{Versions: map[string]struct{}{version: {}}}
	if err := writeJSON(filepath.Join(tofuDir, "index.json"), index); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(tofuDir, version+".json"), mirrorVersion{archives}); err != nil {
		return err
	}
	// Terraform asks for registry.terraform.io/tfccm/lbhost: the same
	// documents, pointing at the same zips (URLs are relative to the
	// document).
	tfDir := filepath.Join(root, filepath.FromSlash(mirror.TerraformSource))
	if err := os.MkdirAll(tfDir, 0o755); err != nil {
		return err
	}
	up := map[string]mirrorArchive{}
	for k, a := range archives {
		a.URL = path.Join("../../..", mirror.Source, a.URL)
		up[k] = a
	}
	if err := writeJSON(filepath.Join(tfDir, "index.json"), index); err != nil {
		return err
	}
	return writeJSON(filepath.Join(tfDir, version+".json"), mirrorVersion{up})
}

func writeJSON(file string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(file, append(b, '\n'))
}
