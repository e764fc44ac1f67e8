package repo

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tfccm/tfccm/lbhost/mirror"
)

// TestBuildToLinksOneSharedOutput: two builds of one command give two
// paths to the one shared output, .work/testbin/<name> (the second build
// found it up to date and did not relink), and removing a test's copy
// leaves the shared one.
func TestBuildToLinksOneSharedOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build: not with -short")
	}
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a", "cleantree"), filepath.Join(dir, "b", "cleantree")
	for _, dst := range []string{a, b} {
		if err := BuildTo("./hack/cleantree", dst); err != nil {
			t.Fatal(err)
		}
	}
	shared := filepath.Join(root, ".work", "testbin", "cleantree")
	sa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	if sa.Mode().Perm()&0o100 == 0 {
		t.Errorf("%s is not executable: %v", a, sa.Mode())
	}
	for _, p := range []string{b, shared} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(sa, st) {
			t.Errorf("%s and %s are different files: the second build relinked or copied", a, p)
		}
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(shared); err != nil {
		t.Errorf("removing a test's binary removed the shared output: %v", err)
	}
}

// TestLBHostMirrorHoldsOnlyTheProvider: tofu hashes every file of a
// provider's directory in a filesystem mirror (h1), so after
// LBHostCLIConfig, run as a second test process of one make test runs it
// (its build a link to the same shared output as the mirror's binary),
// each platform directory holds the binary alone and no staging file is
// left behind.
func TestLBHostMirrorHoldsOnlyTheProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build: not with -short")
	}
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // a second process: Once anew, the mirror already linked
		lbhost.once, lbhost.cfg, lbhost.err = sync.Once{}, "", nil
		if _, err := LBHostCLIConfig(); err != nil {
			t.Fatal(err)
		}
	}
	for _, source := range []string{mirror.Source, mirror.TerraformSource} {
		bin := mirror.BinaryPath(filepath.Join(root, "bin", "providers"), source, mirror.Version)
		entries, err := os.ReadDir(filepath.Dir(bin))
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != filepath.Base(bin) {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("%s holds %v, want only %s: tofu's h1 hash of the package would change", filepath.Dir(bin), names, filepath.Base(bin))
		}
	}
	left, err := filepath.Glob(filepath.Join(root, ".work", "lbhost-provider-*.tmp*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("staging files left behind: %v", left)
	}
}
