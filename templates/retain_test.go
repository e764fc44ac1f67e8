package templates

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/tfccm/tfccm/workspace"
)

// TestBuiltinModulesForget: every built-in load balancer module can be
// kept at delete (tfccm.io/retain-on-delete): its forget configuration
// (workspace.ForgetSpec) parses, declares a removed block for each of its
// resources, and what it keeps reads only variables and locals it keeps,
// so its providers are configured as before.
func TestBuiltinModulesForget(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("*", "loadbalancer*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no modules: %v", err)
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			spec := workspace.Spec{Name: "lb", Files: map[string][]byte{}}
			tfs, _ := filepath.Glob(filepath.Join(dir, "*.tf"))
			resources := 0
			for _, f := range tfs {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				spec.Files[filepath.Base(f)] = b
				resources += strings.Count(string(b), "\nresource \"")
				if strings.HasPrefix(string(b), "resource \"") {
					resources++
				}
			}
			forget, err := workspace.ForgetSpec(spec)
			if err != nil {
				t.Fatal(err)
			}
			locals, refs := map[string]bool{}, []hcl.Traversal{}
			for p, b := range forget.Files {
				f, diags := hclsyntax.ParseConfig(b, p, hcl.InitialPos)
				if diags.HasErrors() {
					t.Fatalf("%s: %v", p, diags)
				}
				for _, blk := range f.Body.(*hclsyntax.Body).Blocks {
					if p == workspace.ForgetFile {
						continue
					}
					if blk.Type == "locals" {
						for name := range blk.Body.Attributes {
							locals[name] = true
						}
					}
					refs = append(refs, bodyRefs(blk.Body, blk.Type == "variable")...)
				}
			}
			for _, r := range refs {
				switch root := r.RootName(); root {
				case "var", "each", "path", "terraform", "count":
				case "local":
					if a, ok := r[1].(hcl.TraverseAttr); !ok || !locals[a.Name] {
						t.Errorf("a kept block reads a dropped local: %s", r.SourceRange())
					}
				default:
					t.Errorf("a kept block reads %s (%s)", root, r.SourceRange())
				}
			}
			if n := strings.Count(string(forget.Files[workspace.ForgetFile]), "removed {"); n != resources || n == 0 {
				t.Errorf("%d removed blocks for %d resources:\n%s", n, resources, forget.Files[workspace.ForgetFile])
			}
		})
	}
}

// bodyRefs returns every reference in b's attributes and nested blocks;
// a variable's type (a type expression, not references) is left out.
func bodyRefs(b *hclsyntax.Body, variable bool) []hcl.Traversal {
	var out []hcl.Traversal
	for name, a := range b.Attributes {
		if !(variable && name == "type") {
			out = append(out, a.Expr.Variables()...)
		}
	}
	for _, nb := range b.Blocks {
		out = append(out, bodyRefs(nb.Body, false)...)
	}
	return out
}
