package templates

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// File is one file of a module, relative to the module directory.
type File struct {
	Path string
	Data []byte
	// Exec marks files written executable (0755): files starting with "#!".
	// Embedded files and ConfigMap volumes do not keep modes, so the shebang
	// is the one rule that survives both.
	Exec bool
}

// Variable is a root-module variable a template declares.
type Variable struct {
	Name       string
	Type       cty.Type
	Defaults   *typeexpr.Defaults
	HasDefault bool
	// Ephemeral is set for `ephemeral = true`: the value never reaches a
	// plan or state.
	Ephemeral bool
	Range     hcl.Range
}

// Module is one parsed template module (loadbalancer, a variant, or routes).
type Module struct {
	// Key is the module's directory name in the set: "loadbalancer",
	// "loadbalancer.<variant>" or "routes".
	Key     string
	Kind    Kind
	Variant string // "" for the default
	// Origin names where the module came from (for logs and diagnostics).
	Origin    string
	Files     []File // sorted by Path
	Variables map[string]*Variable
	Outputs   map[string]hcl.Range
	// OpenTofuOnly says why HashiCorp Terraform cannot run the module
	// ("" = both can): a provider block with for_each (OpenTofu 1.9+).
	OpenTofuOnly string
	// Health is a load balancer module's health module (HealthDir), nil
	// when it has none: the set reads no backend health for it.
	Health *Module
	// Credentials is set when the module declares the ephemeral variable
	// tofu.CredentialsVar: the engine hands it the configured
	// credentials it declares (Env) at every plan and apply.
	Credentials bool
	// Env names the configured credentials (terraform.env, pass_env) the
	// module's tofu and providers receive, from its
	// tofu.CredentialsFile (sorted; none without the file). The
	// admin's declaration: no other credential reaches its workspaces.
	Env []string
}

// kindOf maps a set entry name to a module kind and variant.
func kindOf(key string) (Kind, string, bool) {
	switch {
	case key == string(KindLoadBalancer):
		return KindLoadBalancer, "", true
	case key == string(KindRoutes):
		return KindRoutes, "", true
	case key == HostHealthDir:
		return KindHostHealth, "", true
	case key == PeeringDir:
		return KindPeering, "", true
	case strings.HasPrefix(key, string(KindLoadBalancer)+"."):
		return KindLoadBalancer, strings.TrimPrefix(key, string(KindLoadBalancer)+"."), true
	}
	return "", "", false
}

// parseModule parses and validates the root .tf files of a module. files are
// relative to the module; origin prefixes file names in diagnostics.
func parseModule(key string, kind Kind, variant, origin string, files []File) (*Module, hcl.Diagnostics) {
	m := &Module{Key: key, Kind: kind, Variant: variant, Origin: origin, Files: files,
		Variables: map[string]*Variable{}, Outputs: map[string]hcl.Range{}}
	var diags hcl.Diagnostics
	p := hclparse.NewParser()
	rootTF := 0
	moduleRange := hcl.Range{Filename: origin}
	for _, f := range files {
		if f.Path == TfvarsFile || f.Path == BackendFile || f.Path == ManifestFile {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reserved file name",
				Detail:  fmt.Sprintf("%s is written by tfccm into every workspace; a template may not contain it.", f.Path),
				Subject: &hcl.Range{Filename: origin + "/" + f.Path}})
			continue
		}
		if strings.Contains(f.Path, "/") {
			continue // nested modules and data files: copied, not root inputs
		}
		name := origin + "/" + f.Path
		if f.Path == plans.BackendsFile {
			_, d := plans.ParseBackendMembers(f.Data, name)
			diags = append(diags, d...)
			continue
		}
		if f.Path == tofu.CredentialsFile {
			env, d := tofu.ParseCredentials(f.Data, name)
			diags = append(diags, d...)
			m.Env = env
			continue
		}
		var hf *hcl.File
		var d hcl.Diagnostics
		switch {
		case strings.HasSuffix(f.Path, ".tf"):
			hf, d = p.ParseHCL(f.Data, name)
		case strings.HasSuffix(f.Path, ".tf.json"):
			hf, d = p.ParseJSON(f.Data, name)
		default:
			continue
		}
		rootTF++
		diags = append(diags, d...)
		if hf == nil || d.HasErrors() {
			continue
		}
		diags = append(diags, m.readFile(hf)...)
	}
	if rootTF == 0 {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty module",
			Detail: fmt.Sprintf("Module %s has no .tf files.", key), Subject: &moduleRange})
	}
	if diags.HasErrors() {
		return nil, diags
	}
	diags = append(diags, m.check()...)
	if kind == KindLoadBalancer {
		diags = append(diags, m.parseHealth()...)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return m, diags
}

// parseHealth parses and checks the module's health module, if it has one
// (.tf files in HealthDir), as a module of kind KindHealth.
func (m *Module) parseHealth() hcl.Diagnostics {
	var files []File
	root := false
	for _, f := range m.Files {
		if rel, ok := strings.CutPrefix(f.Path, HealthDir+"/"); ok {
			f.Path = rel
			files = append(files, f)
			root = root || !strings.Contains(rel, "/") && (strings.HasSuffix(rel, ".tf") || strings.HasSuffix(rel, ".tf.json"))
		}
	}
	if !root {
		return nil
	}
	h, diags := parseModule(m.Key+"/"+HealthDir, KindHealth, m.Variant, m.Origin+"/"+HealthDir, files)
	if h != nil {
		m.Health = h
		if h.OpenTofuOnly != "" && m.OpenTofuOnly == "" {
			m.OpenTofuOnly = HealthDir + ": " + h.OpenTofuOnly
		}
	}
	return diags
}

var fileSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "variable", LabelNames: []string{"name"}},
	{Type: "output", LabelNames: []string{"name"}},
	{Type: "terraform"},
	{Type: "provider", LabelNames: []string{"name"}},
}}

var providerSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "for_each"}}}

var variableSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "ephemeral"}}}

var terraformSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "backend", LabelNames: []string{"type"}},
	{Type: "cloud"},
}}

func (m *Module) readFile(f *hcl.File) hcl.Diagnostics {
	content, _, diags := f.Body.PartialContent(fileSchema)
	for _, b := range content.Blocks {
		switch b.Type {
		case "variable":
			name := b.Labels[0]
			if prev, dup := m.Variables[name]; dup {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate variable",
					Detail: fmt.Sprintf("Variable %q was already declared at %s.", name, prev.Range), Subject: b.DefRange.Ptr()})
				continue
			}
			v := &Variable{Name: name, Type: cty.DynamicPseudoType, Range: b.DefRange}
			vc, _, d := b.Body.PartialContent(variableSchema)
			diags = append(diags, d...)
			if a, ok := vc.Attributes["type"]; ok {
				t, defaults, d := typeexpr.TypeConstraintWithDefaults(a.Expr)
				diags = append(diags, d...)
				if !d.HasErrors() {
					v.Type, v.Defaults = t, defaults
				}
			}
			_, v.HasDefault = vc.Attributes["default"]
			if a, ok := vc.Attributes["ephemeral"]; ok {
				val, d := a.Expr.Value(nil)
				v.Ephemeral = !d.HasErrors() && val.Type() == cty.Bool && val.IsKnown() && val.True()
			}
			m.Variables[name] = v
		case "output":
			m.Outputs[b.Labels[0]] = b.DefRange
		case "provider":
			pc, _, _ := b.Body.PartialContent(providerSchema)
			if a, ok := pc.Attributes["for_each"]; ok && m.OpenTofuOnly == "" {
				m.OpenTofuOnly = fmt.Sprintf("provider %q uses for_each (%s)", b.Labels[0], a.NameRange)
			}
		case "terraform":
			tc, _, _ := b.Body.PartialContent(terraformSchema)
			for _, tb := range tc.Blocks {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Template declares a " + tb.Type + " block",
					Detail:  "tfccm generates the state backend of every workspace from the cloud config (file " + BackendFile + "); remove this block from the template.",
					Subject: tb.DefRange.Ptr()})
			}
		}
	}
	return diags
}

// check enforces the contract: every variable is an engine input with a
// compatible type or has a default, and the required outputs exist.
func (m *Module) check() hcl.Diagnostics {
	var diags hcl.Diagnostics
	inputs := Inputs[m.Kind]
	for _, name := range sortedKeys(m.Variables) {
		v := m.Variables[name]
		if name == tofu.CredentialsVar {
			diags = append(diags, v.checkCredentials()...)
			m.Credentials = true
			continue
		}
		want, ok := inputs[name]
		if !ok {
			if !v.HasDefault {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown input",
					Detail: fmt.Sprintf("Variable %q has no default and tfccm provides no input of that name to %s modules (it provides: %s).",
						name, m.Kind, strings.Join(inputNames(m.Kind), ", ")),
					Subject: v.Range.Ptr()})
			}
			continue
		}
		if name == SettingsVar {
			t := v.Type
			if !(t == cty.DynamicPseudoType || t.IsObjectType() || t.IsMapType()) {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Incompatible input type",
					Detail:  fmt.Sprintf("Variable %q must be an object, a map or any, not %s.", name, typeString(t)),
					Subject: v.Range.Ptr()})
			}
			continue
		}
		if msg := incompatible(name, want, v.Type); msg != "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Incompatible input type",
				Detail: msg, Subject: v.Range.Ptr()})
		}
	}
	for _, out := range RequiredOutputs[m.Kind] {
		if _, ok := m.Outputs[out]; !ok {
			r := hcl.Range{Filename: m.Origin}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing required output",
				Detail:  fmt.Sprintf("Module %s must declare output %q (see the template contract).", m.Key, out),
				Subject: &r})
		}
	}
	return diags
}

// incompatible explains why a value of the engine's type have cannot become
// the declared type want, or returns "".
func incompatible(path string, have, want cty.Type) string {
	switch {
	case want == cty.DynamicPseudoType || have.Equals(want):
		return ""
	case have.IsObjectType() && want.IsObjectType():
		for _, a := range sortedKeys(want.AttributeTypes()) {
			if !have.HasAttribute(a) {
				if want.AttributeOptional(a) {
					continue
				}
				return fmt.Sprintf("%s.%s: tfccm provides no such attribute (it provides: %s).", path, a, strings.Join(sortedKeys(have.AttributeTypes()), ", "))
			}
			if msg := incompatible(path+"."+a, have.AttributeType(a), want.AttributeType(a)); msg != "" {
				return msg
			}
		}
		return ""
	case have.IsListType() && (want.IsListType() || want.IsSetType()):
		return incompatible(path+"[*]", have.ElementType(), want.ElementType())
	case have.IsMapType() && want.IsMapType():
		return incompatible(path+"[*]", have.ElementType(), want.ElementType())
	}
	if convert.GetConversion(have, want) == nil {
		return fmt.Sprintf("%s: declared as %s, but tfccm provides %s.", path, typeString(want), typeString(have))
	}
	return ""
}

func typeString(t cty.Type) string { return typeexpr.TypeString(t) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkCredentials enforces the credentials variable's declaration: the
// engine gives it the configured credentials, so it must be ephemeral (a
// plain variable's value is saved in plans and state) and take a map of
// strings.
func (v *Variable) checkCredentials() hcl.Diagnostics {
	if !v.Ephemeral {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Credentials variable is not ephemeral",
			Detail:  fmt.Sprintf("Variable %q receives the configured credentials (terraform.env and pass_env): declare it with ephemeral = true, so that they never reach a plan or state (OpenTofu 1.11+, Terraform 1.10+).", tofu.CredentialsVar),
			Subject: v.Range.Ptr()}}
	}
	if msg := incompatible(tofu.CredentialsVar, cty.Map(cty.String), v.Type); msg != "" {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Incompatible input type", Detail: msg, Subject: v.Range.Ptr()}}
	}
	return nil
}
