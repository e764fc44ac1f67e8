package mapping

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// Address is one typed node address (the types of k8s NodeAddress).
type Address struct {
	// Type is InternalIP, ExternalIP, Hostname, InternalDNS or ExternalDNS.
	Type    string
	Address string
}

// Instance is one instance mapped from a state resource. Instances returned
// by Map and by the state package are shared: callers must not modify them.
type Instance struct {
	Name         string
	ProviderID   string // "" when the mapping sets none
	InstanceType string // "" when unset
	Zone         string // "" when unset
	Region       string // "" when unset
	Addresses    []Address
	Labels       map[string]string
	Shutdown     bool

	// Resource is the state address of the resource the instance came from.
	Resource string
	// Rule is the label of the instance block that matched.
	Rule string
}

// Resource is one Terraform state resource, as the mapping sees it.
type Resource struct {
	Address  string
	Mode     string // managed | data
	Type     string
	Name     string
	Module   string // module address, "" for the root module
	Provider string
	// Index is the resource's count or for_each key: nil, a number
	// (float64, json.Number or int) or a string.
	Index any
	// Values are the resource's attributes as decoded from JSON.
	Values map[string]any
	// Sensitive is the resource's sensitive_values JSON: the shape of
	// Values with true at sensitive leaves. Empty means none.
	Sensitive []byte
}

// Mapping is a parsed instances.hcl. It is immutable and safe for
// concurrent use.
type Mapping struct {
	filename string
	src      []byte
	rules    []*rule
	funcs    map[string]function.Function
}

// Field names of an instance block.
const (
	fieldMatch        = "match"
	fieldName         = "name"
	fieldProviderID   = "provider_id"
	fieldInstanceType = "instance_type"
	fieldZone         = "zone"
	fieldRegion       = "region"
	fieldAddresses    = "addresses"
	fieldLabels       = "labels"
	fieldShutdown     = "shutdown"
)

var fileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "instance", LabelNames: []string{"label"}}},
}

var instanceSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: fieldMatch, Required: true},
		{Name: fieldName, Required: true},
		{Name: fieldProviderID},
		{Name: fieldInstanceType},
		{Name: fieldZone},
		{Name: fieldRegion},
		{Name: fieldAddresses},
		{Name: fieldLabels},
		{Name: fieldShutdown},
	},
}

type rule struct {
	label string
	exprs map[string]hcl.Expression
}

// Parse parses an instances.hcl file. filename names the file in errors;
// every error names file:line,column.
func Parse(src []byte, filename string) (*Mapping, error) {
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, fmt.Errorf("parse instances mapping: %w", diags)
	}
	content, diags := f.Body.Content(fileSchema)
	if diags.HasErrors() {
		return nil, fmt.Errorf("parse instances mapping: %w", diags)
	}
	m := &Mapping{filename: filename, src: append([]byte(nil), src...), funcs: functions()}
	seen := map[string]hcl.Range{}
	for _, b := range content.Blocks {
		if prev, ok := seen[b.Labels[0]]; ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate instance block",
				Detail:   fmt.Sprintf("instance %q was already declared at %s.", b.Labels[0], prev),
				Subject:  b.LabelRanges[0].Ptr(),
			})
			continue
		}
		seen[b.Labels[0]] = b.DefRange
		bc, d := b.Body.Content(instanceSchema)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		r := &rule{label: b.Labels[0], exprs: map[string]hcl.Expression{}}
		for name, a := range bc.Attributes {
			diags = append(diags, checkVariables(a.Expr)...)
			r.exprs[name] = a.Expr
		}
		m.rules = append(m.rules, r)
	}
	if diags.HasErrors() {
		return nil, fmt.Errorf("parse instances mapping: %w", diags)
	}
	if len(m.rules) == 0 {
		return nil, fmt.Errorf("parse instances mapping: %s: no instance blocks: a mapping that matches nothing would report every node as gone", filename)
	}
	return m, nil
}

// checkVariables rejects references to anything but `resource`, so typos
// fail at load time rather than per resource.
func checkVariables(expr hcl.Expression) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, tr := range expr.Variables() {
		if root := tr.RootName(); root != "resource" {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unknown variable",
				Detail:   fmt.Sprintf("There is no variable named %q: instance expressions may only refer to resource.", root),
				Subject:  tr.SourceRange().Ptr(),
			})
		}
	}
	return diags
}

// Source is the text the mapping was parsed from.
func (m *Mapping) Source() []byte { return m.src }

// Filename is the name the mapping was parsed under.
func (m *Mapping) Filename() string { return m.filename }

// Rules lists the instance block labels in file order.
func (m *Mapping) Rules() []string {
	out := make([]string, len(m.rules))
	for i, r := range m.rules {
		out[i] = r.label
	}
	return out
}

// Error is an evaluation error for one resource. Its message names the
// file:line,column of the expression and the resource address.
type Error struct {
	Range    hcl.Range
	Summary  string
	Detail   string
	Resource string
}

func (e *Error) Error() string {
	msg := e.Summary
	if e.Detail != "" {
		msg += "; " + e.Detail
	}
	return fmt.Sprintf("%s:%d,%d: %s (resource %s)", e.Range.Filename, e.Range.Start.Line, e.Range.Start.Column, msg, e.Resource)
}

func functions() map[string]function.Function {
	return map[string]function.Function{
		"abs":        stdlib.AbsoluteFunc,
		"can":        tryfunc.CanFunc,
		"chomp":      stdlib.ChompFunc,
		"coalesce":   stdlib.CoalesceFunc,
		"compact":    stdlib.CompactFunc,
		"concat":     stdlib.ConcatFunc,
		"contains":   stdlib.ContainsFunc,
		"distinct":   stdlib.DistinctFunc,
		"element":    stdlib.ElementFunc,
		"flatten":    stdlib.FlattenFunc,
		"format":     stdlib.FormatFunc,
		"formatlist": stdlib.FormatListFunc,
		"join":       stdlib.JoinFunc,
		"jsondecode": stdlib.JSONDecodeFunc,
		"keys":       stdlib.KeysFunc,
		"length":     stdlib.LengthFunc,
		"lookup":     stdlib.LookupFunc,
		"lower":      stdlib.LowerFunc,
		"max":        stdlib.MaxFunc,
		"merge":      stdlib.MergeFunc,
		"min":        stdlib.MinFunc,
		"parseint":   stdlib.ParseIntFunc,
		"regex":      stdlib.RegexFunc,
		"regexall":   stdlib.RegexAllFunc,
		"replace":    stdlib.ReplaceFunc,
		"split":      stdlib.SplitFunc,
		"strlen":     stdlib.StrlenFunc,
		"substr":     stdlib.SubstrFunc,
		"title":      stdlib.TitleFunc,
		"tostring":   toStringFunc,
		"trim":       stdlib.TrimFunc,
		"trimprefix": stdlib.TrimPrefixFunc,
		"trimspace":  stdlib.TrimSpaceFunc,
		"trimsuffix": stdlib.TrimSuffixFunc,
		"try":        tryfunc.TryFunc,
		"upper":      stdlib.UpperFunc,
		"values":     stdlib.ValuesFunc,
		"zipmap":     stdlib.ZipmapFunc,
	}
}

var toStringFunc = stdlib.MakeToFunc(cty.String)
