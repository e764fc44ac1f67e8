package fsutil

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "f.sh")
	if err := WriteFileAtomic(p, []byte("a"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("stat: %v %v", st, err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, []byte("a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); !st.ModTime().Equal(old) {
		t.Error("unchanged file was rewritten")
	}
	if err := WriteFileAtomic(p, []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ = os.Stat(p)
	if string(b) != "b" || st.Mode().Perm() != 0o644 {
		t.Errorf("got %q %v", b, st.Mode())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "sub", ".tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
