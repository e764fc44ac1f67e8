// The structure checks: the module's packages as `go list` sees them, the
// layer order of layers.go held against every import of every package, and
// the package docs held to saying what a package owns.

package docs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// goPackage is one package of the module as `go list` describes it, with
// the doc comments and imports of its non-test files.
type goPackage struct {
	ImportPath string
	Name       string
	Dir        string
	Doc        string // first sentence of the package doc
	GoFiles    []string
	CgoFiles   []string
	Module     struct{ Path string }

	rel      string         // import path relative to the module ("" for the root)
	docText  string         // the whole package doc
	docFiles []string       // the files that carry a package doc
	imports  []sourceImport // the module's packages its non-test files import
}

// sourceImport is one import of a package of the module by one file.
type sourceImport struct {
	file string // relative to the repository root, slash-separated
	path string // relative to the module
}

var (
	loadOnce sync.Once
	loaded   []*goPackage
	loadErr  error
)

// modulePackages lists the module's packages once per test binary (about
// a second: `go list` and a parse of each file's package clause and
// imports).
func modulePackages(t *testing.T) []*goPackage {
	t.Helper()
	repoRoot := root(t)
	loadOnce.Do(func() { loaded, loadErr = loadPackages(repoRoot) })
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded
}

// loadPackages runs `go list -find ./...` (no dependency resolution: the
// imports come from parsing the files) in the repository root and parses each
// package's non-test files for their package doc and imports.
func loadPackages(repoRoot string) ([]*goPackage, error) {
	cmd := exec.Command("go", "list", "-find", "-e", "-json=ImportPath,Name,Dir,Doc,GoFiles,CgoFiles,Module", "./...")
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list ./...: %w: %s", err, stderr.String())
	}
	var pkgs []*goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := &goPackage{}
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list's output: %w", err)
		}
		p.rel = strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, p.Module.Path), "/")
		if err := p.parse(repoRoot); err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		return nil, errors.New("go list ./... listed no package")
	}
	return pkgs, nil
}

// parse reads the package doc and the module-internal imports of the
// package's non-test files.
func (p *goPackage) parse(repoRoot string) error {
	fset := token.NewFileSet()
	var docs []string
	for _, name := range append(append([]string{}, p.GoFiles...), p.CgoFiles...) {
		path := filepath.Join(p.Dir, name)
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return fmt.Errorf("parsing %s: %w", path, err)
		}
		if f.Doc != nil {
			docs = append(docs, f.Doc.Text())
			p.docFiles = append(p.docFiles, name)
		}
		rel, err := filepath.Rel(repoRoot, path)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			ip, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: import %s: %w", rel, imp.Path.Value, err)
			}
			if r, ok := strings.CutPrefix(ip, p.Module.Path+"/"); ok {
				p.imports = append(p.imports, sourceImport{filepath.ToSlash(rel), r})
			}
		}
	}
	p.docText = strings.Join(docs, "\n")
	return nil
}

// placement is where a package falls in Layers.
type placement struct {
	layer  int    // index into layers
	family string // the matched pattern, with a "*" replaced by the child
}

// place finds the layer of a package (import path relative to the module):
// the layer of its most specific matching pattern. Two equally specific
// patterns, or none, are errors that say where to declare the package.
func place(layers []Layer, rel string) (placement, error) {
	best, bestScore, tie := placement{layer: -1}, -1, ""
	for i, l := range layers {
		for _, pat := range l.Patterns {
			family, ok := matchPattern(pat, rel)
			if !ok {
				continue
			}
			score := len(strings.ReplaceAll(pat, "*", ""))
			switch {
			case score > bestScore:
				best, bestScore, tie = placement{i, family}, score, ""
			case score == bestScore:
				tie = fmt.Sprintf("%q (layer %s) and %q (layer %s)", best.family, layers[best.layer].Name, pat, l.Name)
			}
		}
	}
	switch {
	case best.layer < 0:
		return best, fmt.Errorf("package %s is in no layer: add it (or a pattern covering it) to the layer it belongs to in docs/layers.go", rel)
	case tie != "":
		return best, fmt.Errorf("package %s matches two patterns as closely: %s; make one of them more specific in docs/layers.go", rel, tie)
	}
	return best, nil
}

// matchPattern reports whether pattern covers the package rel, and the
// family it puts rel in: "a/b" covers a/b and a/b/...; "a/*" covers every
// package beneath a/, its family being the child a/x.
func matchPattern(pattern, rel string) (family string, ok bool) {
	if parent, ok := strings.CutSuffix(pattern, "/*"); ok {
		rest, ok := strings.CutPrefix(rel, parent+"/")
		if !ok || rest == "" {
			return "", false
		}
		child, _, _ := strings.Cut(rest, "/")
		return parent + "/" + child, true
	}
	if rel == pattern || strings.HasPrefix(rel, pattern+"/") {
		return pattern, true
	}
	return "", false
}

// layerViolations checks every import of pkgs against layers: a package
// imports only lower layers, its own family, or, where the layer has
// Peers, its layer's other families. Each problem names the importing
// file and the import.
func layerViolations(layers []Layer, pkgs []*goPackage) []string {
	var problems []string
	for _, p := range pkgs {
		from, err := place(layers, p.rel)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, imp := range p.imports {
			to, err := place(layers, imp.path)
			if err != nil {
				continue // reported as a package of its own
			}
			if msg := importProblem(layers, from, to); msg != "" {
				problems = append(problems, fmt.Sprintf("%s imports %s: %s (docs/layers.go)", imp.file, imp.path, msg))
			}
		}
	}
	return problems
}

// importProblem says what is wrong with an import from one placement to
// another, or "" when the layer order allows it.
func importProblem(layers []Layer, from, to placement) string {
	only := layers[from.layer].Only
	switch {
	case to.family == from.family:
		return ""
	case to.layer < from.layer && len(only) > 0 && !slices.Contains(only, layers[to.layer].Name):
		return fmt.Sprintf("layer %d %q imports only layers %s, not layer %d %q", from.layer+1, layers[from.layer].Name, strings.Join(only, ", "), to.layer+1, layers[to.layer].Name)
	case to.layer < from.layer:
		return ""
	case to.layer > from.layer:
		return fmt.Sprintf("layer %d %q imports layer %d %q, above it", from.layer+1, layers[from.layer].Name, to.layer+1, layers[to.layer].Name)
	case !layers[from.layer].Peers:
		return fmt.Sprintf("%s and %s are both in layer %d %q, whose families do not import each other", from.family, to.family, from.layer+1, layers[from.layer].Name)
	}
	return ""
}

// TestLayerOrder: every package is in exactly one layer of layers.go and
// no non-test file imports against the layer order.
func TestLayerOrder(t *testing.T) {
	for _, problem := range layerViolations(Layers, modulePackages(t)) {
		t.Error(problem)
	}
}

// TestLayersDeclared: every pattern of layers.go is declared once, has a
// valid form and still covers a package, and every layer says what it owns.
func TestLayersDeclared(t *testing.T) {
	pkgs := modulePackages(t)
	seen, below := map[string]string{}, map[string]bool{}
	for _, l := range Layers {
		for _, name := range l.Only {
			if !below[name] {
				t.Errorf("layer %q: Only names %q, which is no layer below it", l.Name, name)
			}
		}
		below[l.Name] = true
		if l.Name == "" || l.Owns == "" || len(l.Patterns) == 0 {
			t.Errorf("layer %q: a layer needs a name, what it owns and at least one pattern", l.Name)
		}
		for _, pat := range l.Patterns {
			if prev, ok := seen[pat]; ok {
				t.Errorf("pattern %q is declared in layer %q and in layer %q", pat, prev, l.Name)
			}
			seen[pat] = l.Name
			if strings.Contains(strings.TrimSuffix(pat, "/*"), "*") || strings.HasSuffix(pat, "/") {
				t.Errorf("pattern %q: a pattern is an import path, optionally ending in /*", pat)
			}
			covers := false
			for _, p := range pkgs {
				if _, ok := matchPattern(pat, p.rel); ok {
					covers = true
				}
			}
			if !covers {
				t.Errorf("pattern %q of layer %q covers no package: remove it", pat, l.Name)
			}
		}
	}
}

// TestPlace: a package falls into its most specific pattern's layer, a
// "/*" pattern makes each child a family, and an unknown or ambiguous
// package is an error saying where to declare it.
func TestPlace(t *testing.T) {
	layers := []Layer{
		{Name: "low", Patterns: []string{"internal/*", "config"}},
		{Name: "mid", Patterns: []string{"engine", "tie/*"}},
		{Name: "high", Patterns: []string{"internal/repo", "tie/a"}},
	}
	for _, tc := range []struct {
		rel, family, err string
		layer            int
	}{
		{rel: "internal/tfenv", layer: 0, family: "internal/tfenv"},
		{rel: "internal/tfenv/sub", layer: 0, family: "internal/tfenv"},
		{rel: "config", layer: 0, family: "config"},
		{rel: "config/sub/deeper", layer: 0, family: "config"},
		{rel: "configx", err: "package configx is in no layer: add it"},
		{rel: "internal", err: "package internal is in no layer"},
		{rel: "engine/jobs", layer: 1, family: "engine"},
		{rel: "internal/repo", layer: 2, family: "internal/repo"},
		{rel: "internal/repo/sub", layer: 2, family: "internal/repo"},
		{rel: "tie/b", layer: 1, family: "tie/b"},
		{rel: "tie/a", layer: 2, family: "tie/a"},
		{rel: "newtop", err: "in docs/layers.go"},
	} {
		got, err := place(layers, tc.rel)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("place(%s) = %+v, %v; want an error containing %q", tc.rel, got, err, tc.err)
			}
		case err != nil:
			t.Errorf("place(%s): %v", tc.rel, err)
		case got != placement{tc.layer, tc.family}:
			t.Errorf("place(%s) = %+v; want layer %d, family %s", tc.rel, got, tc.layer, tc.family)
		}
	}
	ambiguous := []Layer{{Name: "a", Patterns: []string{"x/*"}}, {Name: "b", Patterns: []string{"x/y"}}}
	if _, err := place(ambiguous, "x/y"); err != nil {
		t.Errorf("x/y is closer to x/y than to x/*: %v", err)
	}
	twice := []Layer{{Name: "a", Patterns: []string{"x"}}, {Name: "b", Patterns: []string{"x"}}}
	if _, err := place(twice, "x/y"); err == nil || !strings.Contains(err.Error(), "two patterns") {
		t.Errorf("a package two layers declare alike: %v; want an error about two patterns", err)
	}
}

// TestLayerViolations: imports down, within a family and between peers
// pass; imports up, between families of a layer without peers, and from
// or to an undeclared package are reported with the importing file.
func TestLayerViolations(t *testing.T) {
	layers := []Layer{
		{Name: "base", Patterns: []string{"internal/*"}},
		{Name: "decl", Patterns: []string{"config", "annotations"}},
		{Name: "product", Patterns: []string{"lbhost"}, Only: []string{"base"}},
		{Name: "top", Patterns: []string{"cmd/*", "test"}, Peers: true},
	}
	pkg := func(rel string, imports ...string) *goPackage {
		p := &goPackage{rel: rel}
		for _, imp := range imports {
			p.imports = append(p.imports, sourceImport{rel + "/x.go", imp})
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pkg  *goPackage
		want string // "" for no problem
	}{
		{"down", pkg("config", "internal/a", "internal/b/sub"), ""},
		{"own family", pkg("config/sub", "config", "config/other"), ""},
		{"own child family", pkg("internal/a", "internal/a/sub"), ""},
		{"peers", pkg("test/e2e", "cmd/x", "test"), ""},
		{"up", pkg("internal/a", "config"), `internal/a/x.go imports config: layer 1 "base" imports layer 2 "decl", above it`},
		{"up from a sub-package", pkg("config/sub", "cmd/x"), `config/sub/x.go imports cmd/x: layer 2 "decl" imports layer 4 "top"`},
		{"up to a product", pkg("config", "lbhost/host"), `config/x.go imports lbhost/host: layer 2 "decl" imports layer 3 "product", above it`},
		{"a product to its only layer and itself", pkg("lbhost/tfprovider", "internal/a", "lbhost/host"), ""},
		{"a product past its only layer", pkg("lbhost/host", "config"), `lbhost/host/x.go imports config: layer 3 "product" imports only layers base, not layer 2 "decl"`},
		{"above a product", pkg("cmd/x", "lbhost/host", "config"), ""},
		{"sibling without peers", pkg("annotations", "config"), `annotations/x.go imports config: annotations and config are both in layer 2 "decl", whose families do not import each other`},
		{"children of a /* pattern", pkg("internal/a", "internal/b"), "internal/a and internal/b are both in layer 1"},
		{"undeclared importer", pkg("newtop", "config"), "package newtop is in no layer"},
	} {
		got := strings.Join(layerViolations(layers, []*goPackage{tc.pkg}), "\n")
		switch {
		case tc.want == "" && got != "":
			t.Errorf("%s: unexpected problem: %s", tc.name, got)
		case tc.want != "" && !strings.Contains(got, tc.want):
			t.Errorf("%s: problems %q; want one containing %q", tc.name, got, tc.want)
		}
	}
}

// fileNameRE finds a Go file's name in a package doc: a doc says what the
// package owns, and a list of its files rots as soon as one is added.
var fileNameRE = regexp.MustCompile(`\b\w+\.go\b`)

// docProblems says what is wrong with a package doc: missing, written in
// two files, not starting with "Package NAME" ("Command NAME" for a main),
// or naming Go files.
func docProblems(p *goPackage) []string {
	if strings.TrimSpace(p.docText) == "" {
		return []string{fmt.Sprintf("%s has no package doc: add a doc.go saying what the package owns", p.rel)}
	}
	var problems []string
	if len(p.docFiles) > 1 {
		problems = append(problems, fmt.Sprintf("%s: a package doc in %d files (%s): keep one, in doc.go or the package's main file", p.rel, len(p.docFiles), strings.Join(p.docFiles, ", ")))
	}
	want := "Package " + p.Name + " "
	if p.Name == "main" {
		want = "Command " + filepath.Base(p.Dir) + " "
	}
	if !strings.HasPrefix(p.docText, want) {
		first := strings.Fields(p.docText)
		first = first[:min(2, len(first))]
		problems = append(problems, fmt.Sprintf("%s: its doc starts %q, not %q", p.rel, strings.Join(first, " "), want))
	}
	if names := fileNameRE.FindAllString(p.docText, -1); len(names) > 0 {
		sort.Strings(names)
		problems = append(problems, fmt.Sprintf("%s: its doc names files (%s): say what the package owns; each file's first comment says what it holds", p.rel, strings.Join(slices.Compact(names), ", ")))
	}
	return problems
}

// TestPackageDocs: every non-test package has a doc that starts with its
// name and says what it owns without naming its files. A directory of
// tests only has no package doc to check.
func TestPackageDocs(t *testing.T) {
	for _, p := range modulePackages(t) {
		if len(p.GoFiles)+len(p.CgoFiles) == 0 {
			continue
		}
		for _, problem := range docProblems(p) {
			t.Error(problem)
		}
	}
}

// TestDocProblems: the doc check accepts a doc that says what a package
// owns and reports the missing, misnamed and file-listing ones.
func TestDocProblems(t *testing.T) {
	for _, tc := range []struct {
		name, pkgName, dir, doc, want string
		docFiles                      []string
	}{
		{"owns", "fsutil", "internal/fsutil", "Package fsutil holds the one way tfccm writes files.\n", "", nil},
		{"command", "main", "cmd/tfccm", "Command tfccm is the offline CLI.\n", "", nil},
		{"a Go module is no file", "tools", "hack/tools", "Package tools builds from go.mod and client-go.\n", "", nil},
		{"missing", "x", "x", "", "x has no package doc", nil},
		{"old name", "instances", "instances", "Package state answers lookups.\n", `its doc starts "Package state", not "Package instances "`, nil},
		{"command named as package", "main", "cmd/tfccm", "Package main runs.\n", `not "Command tfccm "`, nil},
		{name: "two docs", pkgName: "x", dir: "x", doc: "Package x owns x.\n\nPackage x owns y.\n", docFiles: []string{"doc.go", "y.go"}, want: "x: a package doc in 2 files (doc.go, y.go)"},
		{"file list", "harness", "test/harness", "Package harness starts the CCM (ccm.go), nodes (nodes.go) and the CCM again (ccm.go).\n", "its doc names files (ccm.go, nodes.go)", nil},
	} {
		p := &goPackage{Name: tc.pkgName, Dir: filepath.FromSlash("/repo/" + tc.dir), rel: tc.dir, docText: tc.doc, docFiles: tc.docFiles}
		got := strings.Join(docProblems(p), "\n")
		switch {
		case tc.want == "" && got != "":
			t.Errorf("%s: unexpected problem: %s", tc.name, got)
		case tc.want != "" && !strings.Contains(got, tc.want):
			t.Errorf("%s: problems %q; want one containing %q", tc.name, got, tc.want)
		}
	}
}
