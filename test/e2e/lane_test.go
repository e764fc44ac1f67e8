package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLaneNamesTests: every name in the Makefile's E2E_LANE (the tests
// `make test` runs in a second process) is a test of this package, so a
// renamed test cannot leave the lane running nothing while the first
// process skips it. The names are what -run and -skip match exactly.
func TestLaneNamesTests(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^E2E_LANE = \^\(([A-Za-z0-9_|]+)\)\$\$$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no line E2E_LANE = ^(TestA|TestB|...)$$")
	}
	lane := strings.Split(string(m[1]), "|")

	tests := map[string]bool{}
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" {
				tests[fn.Name.Name] = true
			}
		}
	}
	seen := map[string]bool{}
	for _, name := range lane {
		if !tests[name] {
			t.Errorf("E2E_LANE names %s, which is no test of test/e2e", name)
		}
		if seen[name] {
			t.Errorf("E2E_LANE names %s twice", name)
		}
		seen[name] = true
	}
	if len(seen) >= len(tests) {
		t.Errorf("E2E_LANE names all %d tests: the first process would run none", len(tests))
	}
}
