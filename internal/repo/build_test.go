package repo

import (
	"os"
	"path/filepath"
	"testing"
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
