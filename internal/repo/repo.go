// Package repo finds tfccm's repository and the pinned tools `make tools`
// builds into its bin/: what tests, the demo and the local control plane
// use to locate OpenTofu and kube-apiserver.
package repo

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Root finds the directory holding tfccm's go.mod, walking up from the
// working directory.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/tfccm/tfccm\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the tfccm repository (no go.mod of github.com/tfccm/tfccm above the working directory)")
		}
		dir = parent
	}
}

// TofuPath is the OpenTofu to use: $TFCCM_TOFU when set, else the
// repository's bin/tofu. It fails when neither exists.
func TofuPath() (string, error) {
	if p := os.Getenv("TFCCM_TOFU"); p != "" {
		return p, nil
	}
	root, err := Root()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "tofu")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("OpenTofu not found at %s (run `make tools` or set TFCCM_TOFU)", p)
	}
	return p, nil
}

// Tofu is TofuPath for tests: a missing OpenTofu fails the test (never
// skips it), since `make test` builds it first. With -short (make unit,
// the pure-logic tests) a test that runs OpenTofu is skipped.
func Tofu(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs OpenTofu: not with -short")
	}
	p, err := TofuPath()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
