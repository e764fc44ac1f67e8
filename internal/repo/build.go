package repo

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Build compiles the repository's package pkg (e.g.
// "./cmd/terraform-cloud-controller-manager") for the test and returns the
// binary's path in a temporary directory of the test, so a test runs the
// code under test rather than a stale bin/ (BuildTo).
func Build(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), path.Base(pkg))
	if err := BuildTo(pkg, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// BuildTo compiles the repository's package pkg and puts the binary at
// dst. The link goes through one output per command shared by every test
// process, .work/testbin/<name>, under a file lock: go build relinks it
// only when the code changed since (it compares the build ID), so the test
// processes of one `make test` link a command once, not once per test and
// process (a link of tfccm's 60-100 MB commands costs seconds of CPU, an
// up-to-date check under one). dst is a hard link to (or a copy of) that
// output, so a later relink never changes a binary a test runs.
func BuildTo(pkg, dst string) error {
	root, err := Root()
	if err != nil {
		return err
	}
	shared := filepath.Join(root, ".work", "testbin", path.Base(pkg))
	if err := os.MkdirAll(filepath.Dir(shared), 0o755); err != nil {
		return fmt.Errorf("build %s: %w", pkg, err)
	}
	unlock, err := lockFile(shared + ".lock")
	if err != nil {
		return fmt.Errorf("build %s: %w", pkg, err)
	}
	defer unlock()
	build := exec.Command("go", "build", "-o", shared, pkg)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %v\n%s", pkg, err, out)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("build %s: %w", pkg, err)
	}
	_ = os.Remove(dst)
	if err := os.Link(shared, dst); err == nil {
		return nil
	}
	if err := copyFile(shared, dst); err != nil {
		return fmt.Errorf("build %s: %w", pkg, err)
	}
	return nil
}

// lockFile takes an exclusive flock on path (created if missing) and
// returns its release.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
