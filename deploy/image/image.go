// Package image assembles tfccm's container image from files on disk, with
// no Docker engine and no base image: the static binaries, a CA bundle, a
// non-root user, a writable work directory and an OpenTofu CLI config that
// points at a provider filesystem mirror. The result is reproducible: every
// timestamp is the given creation time, every owner and mode is fixed, and
// entries are sorted, so the same inputs give the same digest.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/tfccm/tfccm/internal/providerlock"
)

// Paths inside the image. The Helm chart, deploy/base and the README rely on
// them.
const (
	BinDir = "/usr/local/bin"
	// CCM is the entrypoint.
	CCM = BinDir + "/terraform-cloud-controller-manager"
	// WorkDir is writable by User: the cloud config's default work_dir
	// (config.DefaultWorkDir, kept equal by a test).
	WorkDir = "/var/lib/tfccm"
	// ProviderMirror is the filesystem mirror of provider plugins (the
	// layout `tofu providers mirror` writes); CLIConfig points at it.
	ProviderMirror = "/usr/local/share/tfccm/providers"
	// ProviderLockFile holds the checksums of every provider in
	// ProviderMirror (internal/providerlock), written when the image is
	// built from the packages it ships: the cloud config's
	// terraform.provider_lock_file (the cluster admin's), so a package
	// changed after the build is refused.
	ProviderLockFile = "/usr/local/share/tfccm/providers.lock.hcl"
	// CLIConfig is OpenTofu's CLI configuration, also named by the
	// TF_CLI_CONFIG_FILE environment variable.
	CLIConfig = "/etc/tfccm/tofurc"
	// CABundle is where Go, OpenTofu and providers find the trusted CAs.
	CABundle = "/etc/ssl/certs/ca-certificates.crt"
	// LicenseFile is where the image carries tfccm's licence text.
	LicenseFile = "/usr/share/doc/tfccm/LICENSE"
	// Licenses is tfccm's licence (an SPDX expression), the image's
	// org.opencontainers.image.licenses label.
	Licenses = "Apache-2.0"
	// UID and GID of the non-root user the image runs as.
	UID = 65532
	GID = 65532
)

// Spec is everything an image is made of.
type Spec struct {
	// CCM, CLI and Tofu are the host paths of the
	// terraform-cloud-controller-manager, tfccm and tofu binaries.
	CCM, CLI, Tofu string
	// CABundle is the host path of the CA bundle (Debian's
	// ca-certificates: /etc/ssl/certs/ca-certificates.crt).
	CABundle string
	// License is the host path of tfccm's LICENSE, copied to LicenseFile.
	License string
	// Providers is an optional directory written by `tofu providers
	// mirror`; its content is copied into ProviderMirror.
	Providers string
	// Created is the only timestamp in the image (config, history, every
	// file). Use the commit time for reproducible builds.
	Created time.Time
	// Labels are OCI labels added to the image config.
	Labels map[string]string
	// Arch is the platform architecture; default amd64.
	Arch string
}

// Layer is one built layer with the description of what is in it.
type Layer struct {
	v1.Layer
	CreatedBy string
}

// CLIConfigFor is the image's OpenTofu CLI config for a mirror holding the
// given providers (HOST/NAMESPACE/TYPE): those are installed from the
// mirror only — OpenTofu otherwise asks their registry too, which fails
// without network — and every other provider comes from its registry.
func CLIConfigFor(providers []string) string {
	var include string
	if len(providers) > 0 {
		q := make([]string, len(providers))
		for i, p := range providers {
			q[i] = fmt.Sprintf("%q", p)
		}
		include = "[" + strings.Join(q, ", ") + "]"
	}
	var b strings.Builder
	b.WriteString("# OpenTofu CLI configuration of the tfccm image (TF_CLI_CONFIG_FILE; set\n")
	b.WriteString("# terraform.cli_config_file to this file in the cloud config).\n")
	b.WriteString("# Providers in the filesystem mirror are installed from it, offline;\n")
	b.WriteString("# any other provider from its registry, if the cluster can reach it.\n")
	b.WriteString("# Add providers with `make image PROVIDERS=dir` (a `tofu providers mirror`\n")
	b.WriteString("# directory), which also lists them here.\n")
	b.WriteString("provider_installation {\n  filesystem_mirror {\n    path = \"" + ProviderMirror + "\"\n")
	if include != "" {
		b.WriteString("    include = " + include + "\n")
	}
	b.WriteString("  }\n  direct {\n")
	if include != "" {
		b.WriteString("    exclude = " + include + "\n")
	}
	b.WriteString("  }\n}\n")
	return b.String()
}

// mirrored lists the providers in a `tofu providers mirror` directory: the
// HOST/NAMESPACE/TYPE directories (packed or unpacked layout alike).
func mirrored(dir string) ([]string, error) {
	var out []string
	hosts, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("image: providers: %w", err)
	}
	for _, h := range hosts {
		nss, _ := os.ReadDir(filepath.Join(dir, h.Name()))
		for _, ns := range nss {
			types, _ := os.ReadDir(filepath.Join(dir, h.Name(), ns.Name()))
			for _, ty := range types {
				if ty.IsDir() {
					out = append(out, h.Name()+"/"+ns.Name()+"/"+ty.Name())
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("image: providers: %s holds no HOST/NAMESPACE/TYPE directory (is it a `tofu providers mirror` directory?)", dir)
	}
	sort.Strings(out)
	return out, nil
}

// Build returns the image described by s.
func Build(s Spec) (v1.Image, error) {
	layers, err := Layers(s)
	if err != nil {
		return nil, err
	}
	return assemble(v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint: []string{CCM},
		WorkingDir: WorkDir,
		Env: []string{
			"PATH=/usr/local/sbin:" + BinDir + ":/usr/sbin:/usr/bin:/sbin:/bin",
			"HOME=" + WorkDir,
			"TF_CLI_CONFIG_FILE=" + CLIConfig,
			"SSL_CERT_FILE=" + CABundle,
		},
		Labels: withLicense(s.Labels),
	}, s.Arch, s.Created, layers)
}

// StandardLabels are the OCI labels of tfccm's image: what it is, where
// its source is, when it was made (created, the commit time) and, when
// given, its version and source revision. Build adds the licence.
func StandardLabels(version, revision string, created time.Time) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "tfccm",
		"org.opencontainers.image.description": "Kubernetes cloud-controller-manager whose cloud is described in Terraform (with OpenTofu)",
		"org.opencontainers.image.source":      "https://github.com/tfccm/tfccm",
		"org.opencontainers.image.created":     created.UTC().Format(time.RFC3339),
		"io.tfccm.provider-mirror":             ProviderMirror,
		"io.tfccm.tofu-cli-config":             CLIConfig,
	}
	if revision != "" {
		l["org.opencontainers.image.revision"] = revision
	}
	if version != "" {
		l["org.opencontainers.image.version"] = version
	}
	return l
}

// withLicense is labels plus org.opencontainers.image.licenses: the image
// always carries LicenseFile, so it always says which licence that is.
func withLicense(labels map[string]string) map[string]string {
	out := map[string]string{"org.opencontainers.image.licenses": Licenses}
	for k, v := range labels {
		out[k] = v
	}
	return out
}

// assemble stacks layers under config into an OCI image stamped created.
func assemble(config v1.Config, arch string, createdAt time.Time, layers []Layer) (v1.Image, error) {
	if arch == "" {
		arch = "amd64"
	}
	created := v1.Time{Time: createdAt.UTC().Truncate(time.Second)}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.ConfigFile(base, &v1.ConfigFile{
		Architecture: arch,
		OS:           "linux",
		Created:      created,
		Config:       config,
	})
	if err != nil {
		return nil, err
	}
	adds := make([]mutate.Addendum, 0, len(layers))
	for _, l := range layers {
		adds = append(adds, mutate.Addendum{
			Layer:     l.Layer,
			MediaType: types.OCILayer,
			History:   v1.History{Created: created, CreatedBy: l.CreatedBy, Comment: "tfccm hack/image"},
		})
	}
	if img, err = mutate.Append(img, adds...); err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, created)
}

// Layers builds the image's layers, least likely to change first: the base
// file system, OpenTofu, tfccm's binaries and, when given, the providers.
func Layers(s Spec) ([]Layer, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	ca, license, providers, err := s.readBase()
	if err != nil {
		return nil, err
	}
	specs := []layerSpec{{"base: user 65532, CA bundle, OpenTofu CLI config, work dir, LICENSE", baseFS(ca, license, providers)}}
	bins, err := s.binaryLayers()
	if err != nil {
		return nil, err
	}
	specs = append(specs, bins...)
	if s.Providers != "" {
		pl, err := providerLayer(s.Providers)
		if err != nil {
			return nil, err
		}
		specs = append(specs, pl)
	}
	var out []Layer
	for _, sp := range specs {
		l, err := layer(sp.entries, s.Created, sp.by)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// layerSpec is one layer to build: its entries and the history's
// created_by line.
type layerSpec struct {
	by      string
	entries []entry
}

// check refuses a Spec that lacks one of the files every image carries.
func (s Spec) check() error {
	for what, p := range map[string]string{"CCM binary": s.CCM, "tfccm binary": s.CLI, "tofu binary": s.Tofu, "CA bundle": s.CABundle, "LICENSE": s.License} {
		if p == "" {
			return fmt.Errorf("image: no %s given", what)
		}
	}
	return nil
}

// readBase reads what the base layer is written from: the CA bundle (it
// must hold a PEM certificate), the licence and the providers in the
// mirror, if any (for the CLI config).
func (s Spec) readBase() (ca, license []byte, providers []string, err error) {
	if ca, err = os.ReadFile(s.CABundle); err != nil {
		return nil, nil, nil, fmt.Errorf("image: CA bundle: %w", err)
	}
	if !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, nil, nil, fmt.Errorf("image: %s holds no PEM certificate", s.CABundle)
	}
	if license, err = os.ReadFile(s.License); err != nil {
		return nil, nil, nil, fmt.Errorf("image: LICENSE: %w", err)
	}
	if s.Providers != "" {
		if providers, err = mirrored(s.Providers); err != nil {
			return nil, nil, nil, err
		}
	}
	return ca, license, providers, nil
}

// baseFS is the base layer's file system: directories, the users, the
// OpenTofu CLI config for providers, the CA bundle ca and the licence.
func baseFS(ca, license []byte, providers []string) []entry {
	root := owner{}
	user := owner{UID, GID}
	return []entry{
		dir("/etc", 0o755, root),
		dir("/etc/ssl/certs", 0o755, root),
		dir("/etc/tfccm", 0o755, root),
		// Mount points of the chart's ConfigMap volumes.
		dir("/etc/tfccm/config", 0o755, root),
		dir("/etc/tfccm/templates", 0o755, root),
		dir("/tmp", 0o1777, root),
		dir(WorkDir, 0o755, user),
		dir(BinDir, 0o755, root),
		dir(ProviderMirror, 0o755, root),
		data("/etc/passwd", 0o644, root, fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\ntfccm:x:%d:%d:tfccm:%s:/sbin/nologin\n", UID, GID, WorkDir)),
		data("/etc/group", 0o644, root, fmt.Sprintf("root:x:0:\nnogroup:x:65534:\ntfccm:x:%d:\n", GID)),
		// Go's resolver reads it to order /etc/hosts before DNS.
		data("/etc/nsswitch.conf", 0o644, root, "hosts: files dns\n"),
		data(CLIConfig, 0o644, root, CLIConfigFor(providers)),
		data(CABundle, 0o644, root, string(ca)),
		data(LicenseFile, 0o644, root, string(license)),
	}
}

// binaryLayers are the layers of the binaries: OpenTofu, then tfccm's two
// (which change with every commit).
func (s Spec) binaryLayers() ([]layerSpec, error) {
	tofu, err := file(BinDir+"/tofu", s.Tofu, 0o755)
	if err != nil {
		return nil, err
	}
	ccm, err := file(CCM, s.CCM, 0o755)
	if err != nil {
		return nil, err
	}
	cli, err := file(BinDir+"/tfccm", s.CLI, 0o755)
	if err != nil {
		return nil, err
	}
	return []layerSpec{
		{"tofu", []entry{tofu}},
		{"terraform-cloud-controller-manager, tfccm", []entry{ccm, cli}},
	}, nil
}

// providerLayer is the provider mirror's layer: the host directory mirror
// copied into ProviderMirror, with the lock file of its packages.
func providerLayer(mirror string) (layerSpec, error) {
	pe, err := tree(mirror, ProviderMirror)
	if err != nil {
		return layerSpec{}, err
	}
	locked, err := providerlock.Mirror(mirror)
	if err != nil {
		return layerSpec{}, fmt.Errorf("image: %w", err)
	}
	pe = append(pe, data(ProviderLockFile, 0o644, owner{}, string(providerlock.File(locked))))
	return layerSpec{"providers from " + filepath.Base(mirror), pe}, nil
}

// layer is one OCI layer of entries.
func layer(entries []entry, created time.Time, by string) (Layer, error) {
	b, err := tarGz(entries, created)
	if err != nil {
		return Layer{}, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return Layer{}, err
	}
	return Layer{Layer: l, CreatedBy: by}, nil
}

type owner struct{ uid, gid int }

// entry is one file system object of a layer; src (a host file) or body
// gives a regular file's content.
type entry struct {
	path string // absolute, clean
	mode int64
	own  owner
	dir  bool
	src  string
	body []byte
}

func dir(p string, mode int64, o owner) entry { return entry{path: p, mode: mode, own: o, dir: true} }

func data(p string, mode int64, o owner, body string) entry {
	return entry{path: p, mode: mode, own: o, body: []byte(body)}
}

func file(p, src string, mode int64) (entry, error) {
	st, err := os.Stat(src)
	if err != nil {
		return entry{}, fmt.Errorf("image: %w", err)
	}
	if !st.Mode().IsRegular() {
		return entry{}, fmt.Errorf("image: %s is not a regular file", src)
	}
	return entry{path: p, mode: mode, src: src}, nil
}

// tree copies the directory src to dst: directories 0755, files 0755 when
// any execute bit is set and 0644 otherwise, everything owned by root.
// Symbolic links are followed; anything that is neither a file nor a
// directory is an error.
func tree(src, dst string) ([]entry, error) {
	var out []entry
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := path.Join(dst, filepath.ToSlash(rel))
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		switch {
		case st.IsDir():
			out = append(out, dir(target, 0o755, owner{}))
		case st.Mode().IsRegular():
			mode := int64(0o644)
			if st.Mode()&0o111 != 0 {
				mode = 0o755
			}
			out = append(out, entry{path: target, mode: mode, src: p})
		default:
			return fmt.Errorf("image: %s is neither a file nor a directory", p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("image: providers: %w", err)
	}
	return out, nil
}

// tarGz writes entries, with every missing parent directory added (0755,
// root), sorted by path, all stamped with mtime, as a gzip-compressed tar.
func tarGz(entries []entry, mtime time.Time) ([]byte, error) {
	byPath := map[string]entry{}
	for _, e := range entries {
		if !path.IsAbs(e.path) || path.Clean(e.path) != e.path {
			return nil, fmt.Errorf("image: path %q is not absolute and clean", e.path)
		}
		if _, dup := byPath[e.path]; dup {
			return nil, fmt.Errorf("image: %s twice in one layer", e.path)
		}
		byPath[e.path] = e
	}
	for _, e := range entries {
		for p := path.Dir(e.path); p != "/"; p = path.Dir(p) {
			if _, ok := byPath[p]; !ok {
				byPath[p] = dir(p, 0o755, owner{})
			}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	mtime = mtime.UTC().Truncate(time.Second)
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, p := range paths {
		e := byPath[p]
		h := &tar.Header{
			Name:    strings.TrimPrefix(p, "/"),
			Mode:    e.mode,
			Uid:     e.own.uid,
			Gid:     e.own.gid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
			continue
		}
		h.Typeflag = tar.TypeReg
		body := e.body
		if e.src != "" {
			if body, err = os.ReadFile(e.src); err != nil {
				return nil, fmt.Errorf("image: %w", err)
			}
		}
		h.Size = int64(len(body))
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
