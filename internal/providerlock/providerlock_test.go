package providerlock_test

import (
	"archive/zip"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/providerlock"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
)

var platform = runtime.GOOS + "_" + runtime.GOARCH

// writeMirror makes a filesystem mirror: example.com/acme/unpacked in the
// unpacked layout (two versions), example.com/acme/packed as a zip.
func writeMirror(t *testing.T, dir string) {
	t.Helper()
	for _, v := range []string{"1.2.0", "1.10.0"} {
		pkg := filepath.Join(dir, "example.com/acme/unpacked", v, platform)
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "terraform-provider-unpacked_v"+v), []byte("#!/bin/sh\necho "+v+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	zdir := filepath.Join(dir, "example.com/acme/packed")
	if err := os.MkdirAll(zdir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(zdir, "terraform-provider-packed_2.0.0_"+platform+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "terraform-provider-packed_v2.0.0", Method: zip.Deflate, Modified: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("packed provider")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMirrorLockMatchesTofu: the lock file written from a mirror holds
// the checksums `tofu providers lock -fs-mirror` records for it (the
// newest version of a provider with two), and tofu init accepts the
// mirror's packages with it.
func TestMirrorLockMatchesTofu(t *testing.T) {
	tofu := repo.Tofu(t)
	mirror := t.TempDir()
	writeMirror(t, mirror)
	ps, err := providerlock.Mirror(mirror)
	if err != nil {
		t.Fatal(err)
	}
	ours := string(providerlock.File(ps))

	work := t.TempDir()
	cfg := `terraform {
  required_providers {
    unpacked = { source = "example.com/acme/unpacked" }
    packed   = { source = "example.com/acme/packed" }
  }
}
`
	if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	tf := testkit.Tofu{Binary: tofu, Dir: work}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := tf.Run(ctx, "providers", "lock", "-fs-mirror="+mirror, "-platform="+platform); err != nil {
		t.Fatal(err)
	}
	theirs, err := os.ReadFile(filepath.Join(work, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"example.com/acme/unpacked", "example.com/acme/packed"} {
		want, got := block(t, string(theirs), addr), block(t, ours, addr)
		if want.version != got.version {
			t.Errorf("%s: version %s, tofu locks %s", addr, got.version, want.version)
		}
		for _, h := range want.hashes {
			if !slices.Contains(got.hashes, h) {
				t.Errorf("%s: tofu records %s, our lock file has %v", addr, h, got.hashes)
			}
		}
	}

	// tofu init accepts the packages with our lock file, and refuses a
	// package changed by one byte.
	if err := os.WriteFile(filepath.Join(work, ".terraform.lock.hcl"), []byte(ours), 0o644); err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(t.TempDir(), "cli.tfrc")
	if err := os.WriteFile(cli, []byte("provider_installation {\n  filesystem_mirror {\n    path = \""+mirror+"\"\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tf.CLIConfig = cli
	if _, err := tf.Run(ctx, "init", "-input=false", "-backend=false"); err != nil {
		t.Fatalf("init with the mirror's lock file: %v", err)
	}
	bin := filepath.Join(mirror, "example.com/acme/unpacked/1.10.0", platform, "terraform-provider-unpacked_v1.10.0")
	b, _ := os.ReadFile(bin)
	b[3] ^= 1
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(work, ".terraform")); err != nil {
		t.Fatal(err)
	}
	_, err = tf.Run(ctx, "init", "-input=false", "-backend=false", "-lockfile=readonly")
	if err == nil || !strings.Contains(strings.Join(strings.Fields(err.Error()), " "), "match any of the checksums") {
		t.Fatalf("init with a changed package: %v, want a checksum mismatch", err)
	}
}

type locked struct {
	version string
	hashes  []string
}

// block reads one provider's version and hashes from a lock file.
func block(t *testing.T, lock, addr string) locked {
	t.Helper()
	m := regexp.MustCompile(`(?s)provider "` + regexp.QuoteMeta(addr) + `" \{(.*?)\n\}`).FindStringSubmatch(lock)
	if m == nil {
		t.Fatalf("no provider %s in\n%s", addr, lock)
	}
	var l locked
	if v := regexp.MustCompile(`version\s*=\s*"([^"]+)"`).FindStringSubmatch(m[1]); v != nil {
		l.version = v[1]
	}
	for _, h := range regexp.MustCompile(`"((?:h1|zh):[^"]+)"`).FindAllStringSubmatch(m[1], -1) {
		l.hashes = append(l.hashes, h[1])
	}
	return l
}

// TestMirrorRefusesEmpty: a directory without providers is an error, not
// an empty lock file that would pin nothing.
func TestMirrorRefusesEmpty(t *testing.T) {
	if _, err := providerlock.Mirror(t.TempDir()); err == nil || !strings.Contains(err.Error(), "holds no provider") {
		t.Fatalf("empty mirror: %v", err)
	}
	if _, err := providerlock.Mirror(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("missing mirror: no error")
	}
}
