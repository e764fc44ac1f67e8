// The generated layout block of development.md: the layers of layers.go,
// each with its packages and the first sentence of their docs.

package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/testkit"
)

// The markers around the generated block in development.md.
const (
	layoutBegin = "<!-- BEGIN layout: generated from docs/layers.go and the package docs; `go test ./docs -run TestLayoutUpToDate -update` rewrites it -->"
	layoutEnd   = "<!-- END layout -->"
)

// layoutBlock renders the layers from the bottom up, each with what it
// owns, its patterns and a table of its packages and their doc's first
// sentence (without its "Package NAME" or "Command NAME").
func layoutBlock(layers []Layer, pkgs []*goPackage) (string, error) {
	byLayer := make([][]*goPackage, len(layers))
	for _, p := range pkgs {
		at, err := place(layers, p.rel)
		if err != nil {
			return "", err
		}
		byLayer[at.layer] = append(byLayer[at.layer], p)
	}
	var b strings.Builder
	for i, l := range layers {
		peers := ""
		if l.Peers {
			peers = "; its packages may import each other"
		}
		if len(l.Only) > 0 {
			peers += "; imports only from " + strings.Join(l.Only, ", ")
		}
		fmt.Fprintf(&b, "\n**%d. %s** (`%s`%s): %s.\n\n", i+1, l.Name, strings.Join(l.Patterns, "`, `"), peers, l.Owns)
		b.WriteString("| package | its doc's first sentence |\n|---|---|\n")
		sort.Slice(byLayer[i], func(x, y int) bool { return byLayer[i][x].rel < byLayer[i][y].rel })
		for _, p := range byLayer[i] {
			fmt.Fprintf(&b, "| `%s/` | %s |\n", p.rel, tableCell(synopsisRest(p)))
		}
	}
	return b.String(), nil
}

// synopsisRest is the first sentence of a package's doc without the
// "Package NAME " or "Command NAME " it starts with.
func synopsisRest(p *goPackage) string {
	s := p.Doc
	for _, prefix := range []string{"Package " + p.Name + " ", "Command " + filepath.Base(p.Dir) + " "} {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			return rest
		}
	}
	if s == "" {
		return "(no package doc)"
	}
	return s
}

// tableCell escapes text for one cell of a Markdown table.
func tableCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// spliceBlock replaces what lies between the begin and end marker lines of
// page with block.
func spliceBlock(page, begin, end, block string) (string, error) {
	before, rest, ok := strings.Cut(page, begin+"\n")
	if !ok {
		return "", fmt.Errorf("no line %q", begin)
	}
	_, after, ok := strings.Cut(rest, end+"\n")
	if !ok {
		return "", fmt.Errorf("no line %q after %q", end, begin)
	}
	return before + begin + "\n" + block + "\n" + end + "\n" + after, nil
}

// TestLayoutUpToDate fails when development.md's layout block is not what
// layers.go and the package docs generate; -update rewrites it.
func TestLayoutUpToDate(t *testing.T) {
	block, err := layoutBlock(Layers, modulePackages(t))
	if err != nil {
		t.Fatalf("%v (TestLayerOrder says more)", err)
	}
	path := filepath.Join(root(t), "docs", "development.md")
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := spliceBlock(string(page), layoutBegin, layoutEnd, block)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	testkit.Golden(t, path, []byte(want))
}

// TestLayoutBlock: packages are grouped under their layer in order, their
// doc's first sentence without the package's name, table cells escaped;
// an undeclared package is an error.
func TestLayoutBlock(t *testing.T) {
	layers := []Layer{
		{Name: "low", Owns: "leaves", Patterns: []string{"internal/*"}},
		{Name: "top", Owns: "binaries", Patterns: []string{"cmd/*", "test"}, Peers: true, Only: []string{"low"}},
	}
	pkgs := []*goPackage{
		{rel: "cmd/tool", Name: "main", Dir: "/r/cmd/tool", Doc: "Command tool prints a | b."},
		{rel: "internal/b", Name: "b", Dir: "/r/internal/b", Doc: "Package b owns b."},
		{rel: "internal/a", Name: "a", Dir: "/r/internal/a", Doc: "Package state is misnamed."},
		{rel: "test", Name: "test", Dir: "/r/test"},
	}
	got, err := layoutBlock(layers, pkgs)
	if err != nil {
		t.Fatal(err)
	}
	want := "\n**1. low** (`internal/*`): leaves.\n\n" +
		"| package | its doc's first sentence |\n|---|---|\n" +
		"| `internal/a/` | Package state is misnamed. |\n" +
		"| `internal/b/` | owns b. |\n" +
		"\n**2. top** (`cmd/*`, `test`; its packages may import each other; imports only from low): binaries.\n\n" +
		"| package | its doc's first sentence |\n|---|---|\n" +
		"| `cmd/tool/` | prints a \\| b. |\n" +
		"| `test/` | (no package doc) |\n"
	if got != want {
		t.Errorf("layout block:\n%s", testkit.LineDiff(want, got))
	}
	if _, err := layoutBlock(layers, append(pkgs, &goPackage{rel: "newtop"})); err == nil {
		t.Error("a package in no layer rendered without an error")
	}
}

// TestSpliceBlock: the block replaces exactly what lies between the
// markers; missing markers are errors.
func TestSpliceBlock(t *testing.T) {
	for _, tc := range []struct {
		name, page, want, err string
	}{
		{"replaces", "a\nB\nold\nE\nz\n", "a\nB\nnew\n\nE\nz\n", ""},
		{"empty block", "B\nE\n", "B\nnew\n\nE\n", ""},
		{"no begin", "a\nE\n", "", `no line "B"`},
		{"no end", "B\nold\n", "", `no line "E" after "B"`},
	} {
		got, err := spliceBlock(tc.page, "B", "E", "new\n")
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %q, %v; want an error containing %q", tc.name, got, err, tc.err)
			}
		case err != nil || got != tc.want:
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
