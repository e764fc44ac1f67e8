package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// proofRE finds the tests a row of docs/security.md names as its proof.
var proofRE = regexp.MustCompile("`(Test[A-Za-z0-9_]+)`")

// TestSecurityProofsExist holds docs/security.md's threat model to the
// code: every row of its threat tables (a line of a table whose last
// column is "proved by") names at least one test, and every test it names
// is a test function of the repository. A renamed or deleted test fails
// here instead of leaving a line of the threat model proved by nothing.
func TestSecurityProofsExist(t *testing.T) {
	root := root(t)
	src, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := proofRows(string(src))
	if len(rows) == 0 {
		t.Fatal("docs/security.md has no table with a \"proved by\" column")
	}
	tests, err := testFuncs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		names := proofRE.FindAllStringSubmatch(r.proof, -1)
		if len(names) == 0 {
			t.Errorf("docs/security.md:%d: the row names no test that proves it", r.line)
		}
		for _, m := range names {
			if !tests[m[1]] {
				t.Errorf("docs/security.md:%d: %s is not a test function of the repository", r.line, m[1])
			}
		}
	}
}

// proofRow is one row of a threat table and its "proved by" cell.
type proofRow struct {
	line  int
	proof string
}

// proofRows returns the rows of every table whose last header cell is
// "proved by".
func proofRows(src string) []proofRow {
	var out []proofRow
	in := false
	for i, line := range strings.Split(src, "\n") {
		cells := tableCells(line)
		switch {
		case cells == nil:
			in = false
		case !in && strings.EqualFold(cells[len(cells)-1], "proved by"):
			in = true
		case in && strings.Trim(strings.Join(cells, ""), "-: ") == "":
			// the header's separator
		case in:
			out = append(out, proofRow{i + 1, cells[len(cells)-1]})
		}
	}
	return out
}

// tableCells splits a Markdown table line into its trimmed cells, or
// returns nil for a line that is not one.
func tableCells(line string) []string {
	s := strings.TrimSpace(line)
	if !strings.HasPrefix(s, "|") || !strings.HasSuffix(s, "|") || len(s) < 2 {
		return nil
	}
	parts := strings.Split(s[1:len(s)-1], "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// testFuncs returns the names of the Test functions of every _test.go
// file under root.
func testFuncs(root string) (map[string]bool, error) {
	out := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".work", "bin", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") {
				out[fd.Name.Name] = true
			}
		}
		return nil
	})
	return out, err
}
