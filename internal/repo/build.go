package repo

import (
	"os/exec"
	"path"
	"path/filepath"
	"testing"
)

// Build compiles the repository's package pkg (e.g.
// "./cmd/terraform-cloud-controller-manager") into a temporary directory of
// the test and returns the binary's path, so a test runs the code under
// test rather than a stale bin/.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), path.Base(pkg))
	build := exec.Command("go", "build", "-o", bin, pkg)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return bin
}
