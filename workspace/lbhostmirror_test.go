package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/lbhost/mirror"
)

// lbhostMirror copies the lbhost provider built from this repository into
// a filesystem mirror of the test's own and returns the mirror, the
// provider's path in it and a CLI config installing it from there.
func lbhostMirror(t *testing.T) (dir, plugin, cliConfig string) {
	t.Helper()
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
	dir = t.TempDir()
	plugin = mirror.BinaryPath(dir, mirror.Source, mirror.Version)
	if err := os.MkdirAll(filepath.Dir(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plugin, built, 0o755); err != nil {
		t.Fatal(err)
	}
	cliConfig = filepath.Join(t.TempDir(), "cli.tfrc")
	if err := os.WriteFile(cliConfig, []byte(mirror.CLIConfig(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, plugin, cliConfig
}

// lbhostSpec is a workspace that starts the lbhost provider.
func lbhostSpec(name, n string, extra map[string]string) Spec {
	s := Spec{Name: name, Files: map[string][]byte{"main.tf": []byte(`terraform {
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
	for k, v := range extra {
		s.Files[k] = []byte(v)
	}
	s.Hash = s.ContentHash()
	return s
}
