package workspace

// Retain on delete (Spec.Retain, tfccm.io/retain-on-delete): instead of a
// destroy, the engine plans a configuration that forgets every resource of
// the workspace. OpenTofu forgets a resource with a removed block whose
// lifecycle says destroy = false, and only for a resource the
// configuration no longer declares. So the forget configuration is the
// applied one without its resources, data sources, imports, outputs and
// checks: the terraform, provider and variable blocks stay (the providers
// are configured as they were, with the same inputs), the locals that do
// not read a dropped block stay (provider blocks read them), and a removed
// block takes each resource and module call's place. The plan lists every
// resource as "forget" and nothing destroyed; it is planned without
// refresh (nothing needs reading to be forgotten, and a host or cloud that
// does not answer cannot hold a delete up).

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// ForgetFile is the file of the forget configuration that holds the
// removed blocks.
const ForgetFile = "tfccm_retain.tf"

// keptBlocks are the top-level blocks the forget configuration keeps
// whole; locals are kept by attribute (forgetLocals), resource and module
// blocks become removed blocks, and every other block goes.
var keptBlocks = map[string]bool{"terraform": true, "provider": true, "variable": true}

// localRoots are the reference roots a kept local may read.
var localRoots = map[string]bool{"var": true, "local": true, "path": true, "terraform": true}

// ForgetSpec returns the configuration that forgets every resource spec's
// configuration declares (see the top of this file): spec's files with the
// .tf files cut down to what configures the providers, and ForgetFile.
// Other files (inputs, scripts, the backend) are kept as they are. A JSON
// configuration file cannot be cut down and is an error.
func ForgetSpec(spec Spec) (Spec, error) {
	out := spec
	out.Files = make(map[string][]byte, len(spec.Files)+1)
	out.Modes = spec.Modes
	var removed []string
	parsed := map[string]*hclwrite.File{}
	syntax := map[string]*hclsyntax.Body{}
	for p, data := range spec.Files {
		switch {
		case strings.HasSuffix(p, ".tf.json"):
			return Spec{}, fmt.Errorf("retain on delete: %s is JSON configuration, which tfccm cannot turn into a forget configuration; write the template in HCL", p)
		case strings.HasSuffix(p, ".tf") && !strings.Contains(p, "/"):
			wf, diags := hclwrite.ParseConfig(data, p, hcl.InitialPos)
			if diags.HasErrors() {
				return Spec{}, fmt.Errorf("retain on delete: %s: %s", p, diags.Error())
			}
			sf, diags := hclsyntax.ParseConfig(data, p, hcl.InitialPos)
			if diags.HasErrors() {
				return Spec{}, fmt.Errorf("retain on delete: %s: %s", p, diags.Error())
			}
			parsed[p], syntax[p] = wf, sf.Body.(*hclsyntax.Body)
		default:
			out.Files[p] = data
		}
	}
	if _, ok := spec.Files[ForgetFile]; ok {
		return Spec{}, fmt.Errorf("retain on delete: the template has a file named %s, which tfccm writes", ForgetFile)
	}
	locals := keptLocals(syntax)
	for p, wf := range parsed {
		body := wf.Body()
		for _, b := range body.Blocks() {
			labels := b.Labels()
			switch t := b.Type(); {
			case keptBlocks[t]:
				continue
			case t == "locals":
				for name := range b.Body().Attributes() {
					if !locals[name] {
						b.Body().RemoveAttribute(name)
					}
				}
				continue
			case t == "resource" && len(labels) == 2:
				removed = append(removed, labels[0]+"."+labels[1])
			case t == "module" && len(labels) == 1:
				removed = append(removed, "module."+labels[0])
			}
			body.RemoveBlock(b)
		}
		out.Files[p] = hclwrite.Format(wf.Bytes())
	}
	sort.Strings(removed)
	out.Files[ForgetFile] = forgetFile(removed)
	out.Hash = out.ContentHash()
	return out, nil
}

// keptLocals returns the locals (of every file: locals may read each
// other across files) that read only variables, paths and other kept
// locals, never a resource, data source or module that the forget
// configuration drops.
func keptLocals(files map[string]*hclsyntax.Body) map[string]bool {
	refs := map[string][]hcl.Traversal{}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		for _, b := range files[p].Blocks {
			if b.Type != "locals" {
				continue
			}
			for name, a := range b.Body.Attributes {
				refs[name] = a.Expr.Variables()
			}
		}
	}
	kept := map[string]bool{}
	for name := range refs {
		kept[name] = true
	}
	for changed := true; changed; {
		changed = false
		for name, trs := range refs {
			if kept[name] && !readsKept(trs, kept) {
				kept[name], changed = false, true
			}
		}
	}
	return kept
}

// readsKept reports whether every reference in trs is one a kept local
// may make: a variable, a path, terraform.*, or a local still kept.
func readsKept(trs []hcl.Traversal, kept map[string]bool) bool {
	for _, tr := range trs {
		root := tr.RootName()
		if !localRoots[root] {
			return false
		}
		if root == "local" && len(tr) > 1 {
			if a, ok := tr[1].(hcl.TraverseAttr); ok && !kept[a.Name] {
				return false
			}
		}
	}
	return true
}

// forgetFile writes a removed block with destroy = false for every
// address.
func forgetFile(addrs []string) []byte {
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	body.AppendUnstructuredTokens(hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte("# Written by tfccm for tfccm.io/retain-on-delete: the Service was deleted\n# and its load balancer stays in the cloud; every resource is forgotten.\n")}})
	for _, a := range addrs {
		body.AppendNewline()
		b := body.AppendNewBlock("removed", nil).Body()
		b.SetAttributeTraversal("from", traversal(a))
		b.AppendNewBlock("lifecycle", nil).Body().SetAttributeValue("destroy", cty.False)
	}
	return hclwrite.Format(f.Bytes())
}

// traversal turns "a.b" into the traversal a.b.
func traversal(addr string) hcl.Traversal {
	parts := strings.Split(addr, ".")
	tr := hcl.Traversal{hcl.TraverseRoot{Name: parts[0]}}
	for _, p := range parts[1:] {
		tr = append(tr, hcl.TraverseAttr{Name: p})
	}
	return tr
}
