package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tfccm/tfccm/internal/repo"
)

// krewModule is krew itself, built from the module proxy to install the
// manifest as a user's `kubectl krew install` does.
const krewModule = "sigs.k8s.io/krew/cmd/krew@v0.4.3"

// krewRelease writes the tfccm archives of a release holding bin, for
// this machine's platform and linux/arm64 (the same binary: only its
// checksum matters there), and their krew manifest.
func krewRelease(t *testing.T, version, bin string) (dir string, platforms []platform) {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	platforms = []platform{{"linux", runtime.GOARCH}}
	if runtime.GOARCH != "arm64" {
		platforms = append(platforms, platform{"linux", "arm64"})
	}
	for _, p := range platforms {
		err := writeTarGz(filepath.Join(dir, tfccmArchive(version, p)), []member{
			{name: "tfccm", src: bin, exec: true}, {name: "LICENSE", src: filepath.Join(root, "LICENSE")},
		}, epoch)
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := writeKrewManifest(dir, "https://github.com/tfccm/tfccm/releases/download", version, platforms); err != nil {
		t.Fatal(err)
	}
	return dir, platforms
}

// TestKrewManifest checks the manifest against what krew requires of a
// plugin (apiVersion, kind, the plugin's name, a v-prefixed semantic
// version, a short description, per platform an os/arch selector, an
// https URI, the archive's SHA-256 and a bin the archive holds) and
// against the archives it was written from.
func TestKrewManifest(t *testing.T) {
	const version = "v1.2.3"
	bin := filepath.Join(t.TempDir(), "tfccm")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho tfccm\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, platforms := krewRelease(t, version, bin)
	b, err := os.ReadFile(filepath.Join(dir, KrewManifest))
	if err != nil {
		t.Fatal(err)
	}
	var m krewPlugin
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		t.Fatalf("the manifest has fields krew does not know: %v", err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "tfccm" {
		t.Errorf("apiVersion %q, kind %q, name %q", m.APIVersion, m.Kind, m.Metadata.Name)
	}
	if m.Spec.Version != version || !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(m.Spec.Version) {
		t.Errorf("version %q", m.Spec.Version)
	}
	if m.Spec.ShortDescription == "" || len(m.Spec.ShortDescription) > 50 || strings.Contains(m.Spec.ShortDescription, "\n") {
		t.Errorf("shortDescription %q: one line of at most 50 characters", m.Spec.ShortDescription)
	}
	if len(m.Spec.Platforms) != len(platforms) {
		t.Fatalf("%d platforms, want %d", len(m.Spec.Platforms), len(platforms))
	}
	for i, p := range platforms {
		got := m.Spec.Platforms[i]
		archive := filepath.Join(dir, tfccmArchive(version, p))
		if got.Selector.MatchLabels["os"] != p.os || got.Selector.MatchLabels["arch"] != p.arch {
			t.Errorf("%s: selector %v", p, got.Selector.MatchLabels)
		}
		u, err := url.Parse(got.URI)
		if err != nil || u.Scheme != "https" || path.Base(u.Path) != filepath.Base(archive) || !strings.Contains(u.Path, "/"+version+"/") {
			t.Errorf("%s: uri %q is not the https URI of %s of %s", p, got.URI, filepath.Base(archive), version)
		}
		data, err := os.ReadFile(archive)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if got.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: sha256 %s is not the archive's %x", p, got.SHA256, sum)
		}
		members := tarMembers(t, archive)
		if !members[got.Bin] {
			t.Errorf("%s: bin %q not in the archive (%v)", p, got.Bin, members)
		}
		for _, f := range got.Files {
			if !members[f.From] {
				t.Errorf("%s: files.from %q not in the archive", p, f.From)
			}
		}
	}
}

// TestKrewInstall installs the manifest with krew itself, as a user does
// (kubectl krew install --manifest --archive), and runs the installed
// plugin; an archive whose bytes differ from the manifest's checksum is
// refused.
func TestKrewInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds krew and tfccm (make unit runs -short)")
	}
	const version = "v1.2.3"
	dir, platforms := krewRelease(t, version, repo.Build(t, "./cmd/tfccm"))
	bin := t.TempDir()
	build := exec.Command("go", "install", krewModule)
	build.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build krew (%s, from the Go module proxy): %v\n%s", krewModule, err, out)
	}
	krew := func(root string, args ...string) ([]byte, error) {
		cmd := exec.Command(filepath.Join(bin, "krew"), args...)
		cmd.Env = []string{"KREW_ROOT=" + root, "HOME=" + root, "PATH=/usr/bin:/bin"}
		return cmd.CombinedOutput()
	}
	manifest := filepath.Join(dir, KrewManifest)
	archive := filepath.Join(dir, tfccmArchive(version, platforms[0]))

	root := t.TempDir()
	if out, err := krew(root, "install", "--manifest="+manifest, "--archive="+archive); err != nil {
		t.Fatalf("krew install: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(root, "bin", "kubectl-tfccm"), "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tfccm") {
		t.Fatalf("the installed plugin: %v\n%s", err, out)
	}

	tampered := filepath.Join(t.TempDir(), filepath.Base(archive))
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, 0) // a gzip stream with a trailing byte: the same files, another checksum
	if err := os.WriteFile(tampered, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := krew(t.TempDir(), "install", "--manifest="+manifest, "--archive="+tampered); err == nil || !strings.Contains(string(out), "checksum does not match") {
		t.Fatalf("krew installed an archive that does not match the manifest's sha256: %v\n%s", err, out)
	}
}

// tarMembers lists the regular files of a tar.gz.
func tarMembers(t *testing.T, file string) map[string]bool {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h.Typeflag == tar.TypeReg
	}
}
