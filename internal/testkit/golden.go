package testkit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is the -update flag of every test binary that uses Golden; it is
// registered only in test binaries.
var update = func() *bool {
	if !testing.Testing() {
		return new(bool)
	}
	return flag.Bool("update", false, "rewrite golden files and generated docs instead of comparing with them")
}()

// Golden compares got with the file at path and fails t when they differ;
// with -update it writes got to path instead (creating its directory).
// Review the diff of a rewritten file before committing it.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (rerun the test with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: rerun the test with -update and review the diff\n%s", path, LineDiff(string(want), string(got)))
	}
}
