package main

import (
	"bytes"
	"crypto/sha256"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/tfccm/tfccm/internal/repo"
)

// makeImage runs `make image` into dir and returns the printed digest.
func makeImage(t *testing.T, root, dir string) string {
	t.Helper()
	cmd := exec.Command("make", "--no-print-directory", "image", "IMAGE_DIR="+dir, "IMAGE=tfccm.test/tfccm:repro")
	cmd.Dir = root
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "MAKEFLAGS=") && !strings.HasPrefix(e, "MFLAGS=") && !strings.HasPrefix(e, "MAKELEVEL=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	d, err := os.ReadFile(filepath.Join(dir, "digest"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(d))
}

// tree hashes every file of dir by relative path.
func tree(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMakeImageReproducible builds the image twice from this checkout,
// binaries included, into different directories: the digests, the OCI
// layouts and the load archives must be identical byte for byte.
func TestMakeImageReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the image twice")
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	a, b := t.TempDir(), t.TempDir()
	da, db := makeImage(t, root, a), makeImage(t, root, b)
	if da != db || !strings.HasPrefix(da, "sha256:") {
		t.Fatalf("two builds, two digests: %s vs %s", da, db)
	}
	ta, tb := tree(t, filepath.Join(a, "oci")), tree(t, filepath.Join(b, "oci"))
	if len(ta) != len(tb) {
		t.Errorf("layouts differ: %d vs %d files", len(ta), len(tb))
	}
	for p, h := range ta {
		if tb[p] != h {
			t.Errorf("layouts differ in %s", p)
		}
	}
	x, _ := os.ReadFile(filepath.Join(a, "tfccm.tar"))
	y, _ := os.ReadFile(filepath.Join(b, "tfccm.tar"))
	if !bytes.Equal(x, y) || len(x) == 0 {
		t.Errorf("load archives differ (%d vs %d bytes)", len(x), len(y))
	}
	// The layout names the image and holds exactly it.
	idx, err := layout.ImageIndexFromPath(filepath.Join(a, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 || m.Manifests[0].Digest.String() != da {
		t.Fatalf("layout index %+v (%v), want the one image %s", m, err, da)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	layers, _ := img.Layers()
	for _, l := range layers {
		n, _ := l.Size()
		size += n
	}
	t.Logf("digest %s, %d layers, %.1f MiB compressed", da, len(layers), float64(size)/(1<<20))
}
