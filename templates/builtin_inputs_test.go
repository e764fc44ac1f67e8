package templates

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// TestBuiltinTemplatesUseEveryDeclaredInput: a built-in template declares
// only the inputs it uses. Every declared variable is referenced as var.X,
// and every attribute of an object input (service.labels,
// nodes[*].addresses, ...) is referenced as .attr somewhere in the module:
// an input declared but unused would make every change to it (an
// annotation edit) cost a plan. An attribute of the variable itself
// (service.name, not service.ports[*].name) must be referenced as
// var.service.name unless the module also uses the whole object (as in
// for_each = [var.health_check]). Comments, the text of string literals and
// variables' type declarations are not uses; their validation blocks are
// (a template refusing blackhole routes reads routes[*].blackhole).
func TestBuiltinTemplatesUseEveryDeclaredInput(t *testing.T) {
	for _, name := range builtinSets() {
		set, err := LoadBuiltin(name)
		if err != nil {
			t.Fatal(err)
		}
		for key, m := range set.modules {
			t.Run(name+"/"+key, func(t *testing.T) {
				var code strings.Builder
				for _, f := range m.Files {
					switch {
					case strings.HasSuffix(f.Path, ".tf"):
						src, err := codeOnly(f.Path, f.Data)
						if err != nil {
							t.Fatal(err)
						}
						code.Write(src)
					case strings.HasSuffix(f.Path, ".tftpl"):
						code.Write(f.Data)
					}
					code.WriteByte('\n')
				}
				src := code.String()
				for _, vn := range sortedKeys(m.Variables) {
					qvar := `\bvar\.` + regexp.QuoteMeta(vn) + `\b`
					if !regexp.MustCompile(qvar).MatchString(src) {
						t.Errorf("variable %q is declared but never used", vn)
						continue
					}
					// var.X not followed by .attr: the whole object is used.
					whole := regexp.MustCompile(qvar + `(?:[^.]|$)`).MatchString(src)
					for _, attr := range objectAttributes(m.Variables[vn].Type, vn) {
						leaf := attr[strings.LastIndex(attr, ".")+1:]
						re := `\.` + regexp.QuoteMeta(leaf) + `\b|\["` + regexp.QuoteMeta(leaf) + `"\]`
						if !whole && attr == vn+"."+leaf {
							re = qvar + `(?:\.` + regexp.QuoteMeta(leaf) + `\b|\["` + regexp.QuoteMeta(leaf) + `"\])`
						}
						if !regexp.MustCompile(re).MatchString(src) && !usedWhole(src, attr) {
							t.Errorf("input attribute %s is declared but never used", attr)
						}
					}
				}
			})
		}
	}
}

// usedWhole reports whether an object that holds attr (a path such as
// settings.bgp.bfd_profiles[*].detect_multiplier) is referenced whole as
// var.<path> not followed by an attribute or index (handed to a resource
// as it is: bfd_profiles = var.settings.bgp.bfd_profiles).
func usedWhole(src, attr string) bool {
	p := strings.ReplaceAll(attr, "[*]", "")
	for i := strings.LastIndex(p, "."); i > 0; i = strings.LastIndex(p, ".") {
		p = p[:i]
		if !strings.Contains(p, ".") {
			return false // the variable itself: checked by the caller
		}
		if regexp.MustCompile(`\bvar\.` + regexp.QuoteMeta(p) + `\b(?:[^.\[\w]|$)`).MatchString(src) {
			return true
		}
	}
	return false
}

// objectAttributes lists the attribute paths of object types inside t.
func objectAttributes(t cty.Type, path string) []string {
	var out []string
	switch {
	case t.IsObjectType():
		for _, a := range sortedKeys(t.AttributeTypes()) {
			p := fmt.Sprintf("%s.%s", path, a)
			out = append(out, p)
			out = append(out, objectAttributes(t.AttributeType(a), p)...)
		}
	case t.IsListType(), t.IsSetType(), t.IsMapType():
		out = append(out, objectAttributes(t.ElementType(), path+"[*]")...)
	}
	return out
}

// codeOnly returns src with what is not a use blanked out: comments, the
// literal text of strings (interpolations stay) and the arguments of
// variable blocks (type, description, default, ...), whose validation
// blocks stay.
func codeOnly(filename string, src []byte) ([]byte, error) {
	out := append([]byte(nil), src...)
	blank := func(r hcl.Range) {
		for i := r.Start.Byte; i < r.End.Byte && i < len(out); i++ {
			if out[i] != '\n' {
				out[i] = ' '
			}
		}
	}
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		if b.Type != "variable" {
			continue
		}
		for _, a := range b.Body.Attributes {
			blank(a.SrcRange)
		}
	}
	tokens, diags := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	for _, tok := range tokens {
		switch tok.Type {
		case hclsyntax.TokenComment, hclsyntax.TokenQuotedLit, hclsyntax.TokenStringLit:
			blank(tok.Range)
		}
	}
	return out, nil
}

// TestBuiltinCredentials: which configured credentials each built-in
// module's workspaces receive (credentials.hcl): none for the sets on our
// own lbhost provider, the provider's own variables for each cloud.
func TestBuiltinCredentials(t *testing.T) {
	for _, tc := range []struct {
		set, module string
		has         string // "" = the module declares none
	}{
		{"local", "loadbalancer", ""},
		{"local", "loadbalancer.l4", ""},
		{"local", "routes", ""},
		{"baremetal", "loadbalancer", ""},
		{"baremetal", "routes", ""},
		{"nodes", "loadbalancer", ""},
		{"nodes", "routes", ""},
		{"hcloud", "loadbalancer", "HCLOUD_TOKEN"},
		{"hcloud", "routes", "HCLOUD_TOKEN"},
		{"digitalocean", "loadbalancer", "DIGITALOCEAN_TOKEN"},
		{"exoscale", "loadbalancer", "EXOSCALE_API_SECRET"},
		{"google", "loadbalancer", "GOOGLE_CREDENTIALS"},
		{"google", "routes", "GOOGLE_CREDENTIALS"},
		{"oci", "loadbalancer", "OCI_PRIVATE_KEY"},
		{"oci", "routes", "OCI_PRIVATE_KEY"},
		{"openstack", "loadbalancer", "OS_APPLICATION_CREDENTIAL_SECRET"},
		{"openstack", "routes", "OS_PASSWORD"},
	} {
		set, err := LoadBuiltin(tc.set)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := set.Module(tc.module)
		if !ok {
			t.Fatalf("%s has no module %s", tc.set, tc.module)
		}
		switch {
		case tc.has == "" && len(m.Env) != 0:
			t.Errorf("%s/%s declares credentials %v, want none", tc.set, tc.module, m.Env)
		case tc.has != "" && !slices.Contains(m.Env, tc.has):
			t.Errorf("%s/%s declares %v, want %s among them", tc.set, tc.module, m.Env, tc.has)
		}
	}
}
