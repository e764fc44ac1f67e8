package annotations

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/testkit"
)

// TestDocsUpToDate fails when docs/annotations.md or a README table between
// the markers is stale; -update rewrites them.
func TestDocsUpToDate(t *testing.T) {
	doc := filepath.Join("..", "docs", "annotations.md")
	check(t, doc, document())
	// README tables: rewritten between markers when present.
	for _, readme := range []string{filepath.Join("..", "templates", "README.md"), filepath.Join("..", "README.md")} {
		src, err := os.ReadFile(readme)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		want, ok := splice(string(src))
		if !ok {
			continue
		}
		check(t, readme, want)
	}
}

func check(t *testing.T, path, want string) {
	t.Helper()
	testkit.Golden(t, path, []byte(want))
}

func TestSplice(t *testing.T) {
	in := "intro\n" + beginMarker + "\nold\n" + endMarker + "\noutro\n"
	out, ok := splice(in)
	if !ok || !strings.HasPrefix(out, "intro\n"+beginMarker) || !strings.HasSuffix(out, endMarker+"\noutro\n") || strings.Contains(out, "\nold\n") { // the old table line (the new one may well say "holds")
		t.Fatalf("splice = %q", out)
	}
	if _, ok := splice("no markers"); ok {
		t.Fatal("splice without markers reported ok")
	}
}
