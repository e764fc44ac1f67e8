package workspace

import (
	"os"
	"testing"
)

func TestSpecHashes(t *testing.T) {
	a := testSpec("h", 1, 0)
	b := testSpec("h", 2, 0)
	if a.ContentHash() == b.ContentHash() {
		t.Fatal("different inputs, same content hash")
	}
	if a.initHash() != b.initHash() {
		t.Fatal("an input change alone must not require init")
	}
	c := testSpec("h", 1, 0)
	c.Files["backend.tf"] = []byte(`terraform {}`)
	if a.initHash() == c.initHash() {
		t.Fatal("a backend file change must require init")
	}
	d := testSpec("h", 1, 0)
	d.Modes = map[string]os.FileMode{"main.tf": 0o755}
	if a.ContentHash() == d.ContentHash() {
		t.Fatal("a mode change must change the hash")
	}
}
