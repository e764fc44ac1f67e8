package main

// The krew plugin manifest: hack/release/krew.yaml (what a release does not
// change) with the release's version and, per platform, the tfccm
// archive's download URI and SHA-256, read from the archive written.

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

//go:embed krew.yaml
var krewTemplate []byte

// KrewManifest is the manifest's file name in the release.
const KrewManifest = "tfccm.krew.yaml"

// krewBinary is the release binary the plugin installs (as kubectl-tfccm).
const krewBinary = "tfccm"

// krewPlugin is krew's Plugin (krew.googlecontainertools.github.com/v1alpha2),
// the fields tfccm's manifest uses.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string         `json:"version"`
		Homepage         string         `json:"homepage,omitempty"`
		ShortDescription string         `json:"shortDescription"`
		Description      string         `json:"description,omitempty"`
		Caveats          string         `json:"caveats,omitempty"`
		Platforms        []krewPlatform `json:"platforms"`
	} `json:"spec"`
}

type krewPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string     `json:"uri"`
	SHA256 string     `json:"sha256"`
	Files  []krewFile `json:"files"`
	Bin    string     `json:"bin"`
}

type krewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// tfccmArchive is the file name of the tfccm archive of p.
func tfccmArchive(version string, p platform) string {
	return fmt.Sprintf("%s_%s_%s.tar.gz", krewBinary, version, p.dir())
}

// writeKrewManifest writes dir/tfccm.krew.yaml for the tfccm archives in
// dir, downloaded from downloadURL/<version>/<archive>.
func writeKrewManifest(dir, downloadURL, version string, platforms []platform) error {
	var m krewPlugin
	if err := yaml.UnmarshalStrict(krewTemplate, &m); err != nil {
		return fmt.Errorf("hack/release/krew.yaml: %w", err)
	}
	m.Spec.Version = version
	for _, p := range platforms {
		name := tfccmArchive(version, p)
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("krew manifest: %w", err)
		}
		sum := sha256.Sum256(b)
		var kp krewPlatform
		kp.Selector.MatchLabels = map[string]string{"os": p.os, "arch": p.arch}
		kp.URI = downloadURL + "/" + version + "/" + name
		kp.SHA256 = hex.EncodeToString(sum[:])
		kp.Files = []krewFile{{From: krewBinary, To: "."}, {From: "LICENSE", To: "."}}
		kp.Bin = krewBinary
		m.Spec.Platforms = append(m.Spec.Platforms, kp)
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return err
	}
	head := []byte("# The krew plugin manifest of kubectl tfccm " + version + " (make release, from hack/release/krew.yaml).\n" +
		"# Try it: kubectl krew install --manifest=" + KrewManifest + " [--archive=" + tfccmArchive(version, platforms[0]) + "]\n")
	return writeFile(filepath.Join(dir, KrewManifest), append(head, out...))
}
