package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

// A CycloneDX 1.6 JSON document (https://cyclonedx.org/docs/1.6/json/),
// the part of it an SBOM of Go binaries needs.
type (
	bom struct {
		BOMFormat    string      `json:"bomFormat"`
		SpecVersion  string      `json:"specVersion"`
		SerialNumber string      `json:"serialNumber"`
		Version      int         `json:"version"`
		Metadata     bomMetadata `json:"metadata"`
		Components   []component `json:"components"`
	}
	bomMetadata struct {
		Timestamp string    `json:"timestamp"`
		Tools     bomTools  `json:"tools"`
		Component component `json:"component"`
	}
	bomTools struct {
		Components []component `json:"components"`
	}
	component struct {
		Type       string      `json:"type"`
		BOMRef     string      `json:"bom-ref,omitempty"`
		Name       string      `json:"name"`
		Version    string      `json:"version,omitempty"`
		PURL       string      `json:"purl,omitempty"`
		Hashes     []hash      `json:"hashes,omitempty"`
		Licenses   []license   `json:"licenses,omitempty"`
		Properties []property  `json:"properties,omitempty"`
		Components []component `json:"components,omitempty"`
	}
	hash struct {
		Alg     string `json:"alg"`
		Content string `json:"content"`
	}
	license struct {
		Expression string `json:"expression"`
	}
	property struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
)

// goBinary describes the Go program at file (as it will be named, name)
// from the build information Go embeds in it: the main module, every
// module linked in (the main module too, when it has a version; with the
// replacement actually used), the Go toolchain
// as pkg:golang/stdlib, and the file's SHA-256.
func goBinary(file, name string) (component, error) {
	bi, err := buildinfo.ReadFile(file)
	if err != nil {
		return component{}, fmt.Errorf("sbom: %s: %w", file, err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return component{}, err
	}
	sum := sha256.Sum256(b)
	c := component{
		Type:    "application",
		BOMRef:  "file:" + name,
		Name:    name,
		Version: bi.Main.Version,
		Hashes:  []hash{{"SHA-256", hex.EncodeToString(sum[:])}},
		Properties: []property{
			{"tfccm:go:main-module", bi.Main.Path},
			{"tfccm:go:package", bi.Path},
		},
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOOS", "GOARCH", "vcs.revision", "vcs.modified", "-ldflags":
			c.Properties = append(c.Properties, property{"tfccm:go:" + s.Key, s.Value})
		}
	}
	goVersion := strings.TrimPrefix(bi.GoVersion, "go")
	c.Components = append(c.Components, component{
		Type: "library", BOMRef: name + ":pkg:golang/stdlib@" + goVersion, Name: "stdlib", Version: goVersion,
		PURL: "pkg:golang/stdlib@" + goVersion,
	})
	deps := bi.Deps
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		deps = append([]*debug.Module{&bi.Main}, deps...)
	}
	for _, d := range deps {
		if d.Replace != nil {
			d = d.Replace
		}
		if d.Version == "" { // a local replacement: no version to name
			continue
		}
		purl := "pkg:golang/" + d.Path + "@" + d.Version
		c.Components = append(c.Components, component{
			Type: "library", BOMRef: name + ":" + purl, Name: d.Path, Version: d.Version, PURL: purl,
		})
	}
	sort.Slice(c.Components, func(i, j int) bool { return c.Components[i].BOMRef < c.Components[j].BOMRef })
	return c, nil
}

// newBOM is the SBOM of subject, made of components, stamped created. Its
// serial number is derived from its content, so the same release always
// writes the same document.
func newBOM(subject component, components []component, created time.Time) bom {
	b := bom{
		BOMFormat:   "CycloneDX",
		SpecVersion: "1.6",
		Version:     1,
		Metadata: bomMetadata{
			Timestamp: created.UTC().Format(time.RFC3339),
			Tools:     bomTools{Components: []component{{Type: "application", Name: "tfccm hack/release"}}},
			Component: subject,
		},
		Components: components,
	}
	h := sha256.New()
	fmt.Fprintf(h, "%+v", b)
	s := h.Sum(nil)
	// A version-5-style UUID built from the content hash.
	s[6] = s[6]&0x0f | 0x50
	s[8] = s[8]&0x3f | 0x80
	b.SerialNumber = fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
	return b
}
