package image

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

func TestBuildSmall(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "server")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := SmallSpec{Files: map[string]string{"/server": bin, "/usr/bin/tool": bin}, Entrypoint: []string{"/server"}, Created: time.Unix(1767225600, 0)}
	a, err := BuildSmall(spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildSmall(spec)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("two builds of the same files: digests %s and %s", da, db)
	}
	cf, err := a.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cf.Config.Entrypoint, " "); got != "/server" || cf.OS != "linux" {
		t.Errorf("entrypoint %q, os %q", got, cf.OS)
	}
	modes := map[string]int64{}
	tr := tar.NewReader(mutate.Extract(a))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		modes[h.Name] = h.Mode
	}
	for name, want := range map[string]int64{"server": 0o755, "usr/bin/tool": 0o755, "usr/bin": 0o755, "tmp": 0o1777} {
		if got, ok := modes[name]; !ok || got != want {
			t.Errorf("%s: mode %o (present %v), want %o; entries %v", name, got, ok, want, modes)
		}
	}

	for _, bad := range []SmallSpec{
		{Files: map[string]string{"/server": bin}},
		{Files: map[string]string{"/server": bin}, Entrypoint: []string{"/other"}},
		{Files: map[string]string{"server": bin}, Entrypoint: []string{"server"}},
		{Files: map[string]string{"/server": filepath.Join(dir, "missing")}, Entrypoint: []string{"/server"}},
	} {
		if _, err := BuildSmall(bad); err == nil {
			t.Errorf("BuildSmall(%+v) succeeded", bad)
		}
	}
}
