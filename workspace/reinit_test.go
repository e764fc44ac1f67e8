package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/lbhost/mirror"
)

// TestProviderRebuiltInMirror: the provider in the filesystem mirror is
// replaced by another build of the same version (a new CCM image). The
// workspace's lock file still records the old build's checksum, so every
// plan fails with "does not match any of the checksums recorded in the
// dependency lock file"; the engine runs init again (once) and goes on.
func TestProviderRebuiltInMirror(t *testing.T) {
	if _, err := repo.LBHostCLIConfig(); err != nil {
		t.Fatal(err)
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	built, err := os.ReadFile(mirror.BinaryPath(filepath.Join(root, "bin", "providers"), mirror.Source, mirror.Version))
	if err != nil {
		t.Fatal(err)
	}
	providers := t.TempDir()
	plugin := mirror.BinaryPath(providers, mirror.Source, mirror.Version)
	if err := os.MkdirAll(filepath.Dir(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plugin, built, 0o755); err != nil {
		t.Fatal(err)
	}
	cliConfig := filepath.Join(t.TempDir(), "cli.tfrc")
	if err := os.WriteFile(cliConfig, []byte(mirror.CLIConfig(providers)), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, calls := countingBinary(t)
	e := newTestEngine(t, Options{Binary: bin, CLIConfigFile: cliConfig, Backoff: Backoff{Initial: time.Hour, Max: time.Hour}})
	spec := func(n string) Spec {
		s := Spec{Name: "rebuilt", Files: map[string][]byte{"main.tf": []byte(`terraform {
  required_providers {
    lbhost = { source = "tfccm/lbhost" }
  }
}

provider "lbhost" {
  netns = "tfccm-none"
}

resource "terraform_data" "x" {
  input = "` + n + `"
}
`)}}
		s.Hash = s.ContentHash()
		return s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first := spec("1")
	if _, err := e.Apply(first); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, "rebuilt", first.Hash); err != nil {
		t.Fatalf("first apply: %v", err)
	}
	// Another build: same version, different bytes.
	if err := os.WriteFile(plugin, append(built, []byte("another build")...), 0o755); err != nil {
		t.Fatal(err)
	}
	second := spec("2")
	if _, err := e.Apply(second); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, "rebuilt", second.Hash); err != nil {
		t.Fatalf("apply after the provider was rebuilt: %v", err)
	}
	// The first; after the rebuild the one that fails on the lock file and
	// the one that succeeds without it.
	if n := count(calls(), "init"); n != 3 {
		t.Errorf("%d inits, want 3", n)
	}

	// Rebuilt again, and the next run is a destroy, which does not init
	// first: its own step reports the stale lock file.
	if err := os.WriteFile(plugin, append(built, []byte("a third build")...), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Destroy(second); err != nil {
		t.Fatal(err)
	}
	if st, err := e.Wait(ctx, "rebuilt", second.Hash); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy after another rebuild: %v %+v", err, st)
	}
}
