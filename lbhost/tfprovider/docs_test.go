package tfprovider

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/lbhost.md")

// TestDocs fails when docs/lbhost.md is not what the schemas generate.
func TestDocs(t *testing.T) {
	file := filepath.Join("..", "..", "docs", "lbhost.md")
	want := Docs()
	if *update {
		if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (generate it: go test ./lbhost/tfprovider -run TestDocs -update)", err)
	}
	if string(got) != want {
		t.Fatalf("%s is stale: regenerate it with go test ./lbhost/tfprovider -run TestDocs -update", file)
	}
}
