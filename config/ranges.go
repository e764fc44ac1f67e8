package config

import "github.com/hashicorp/hcl/v2"

// Where a setting is in the cloud config's text, for diagnostics: the
// schema of the top level and the lookup of a block's or attribute's range.

var rootSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "cluster_name"}, {Name: "work_dir"}, {Name: "template_set"}, {Name: "override_dir"},
		{Name: "load_balancer_class"}, {Name: "serve_classless"}, {Name: "baremetal_values_file"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "terraform"}, {Type: "backend", LabelNames: []string{"type"}},
		{Type: "load_balancer"}, {Type: "routes"}, {Type: "instances"}, {Type: "encryption"}, {Type: "policy", LabelNames: []string{"name"}}, {Type: "change_windows"}, {Type: "compat"},
	},
}

// blockAttrRange finds the range of the attribute or block at path (block
// types, then a final attribute or block name) under the top-level block of
// type block, for diagnostics. It falls back to the nearest enclosing block.
func blockAttrRange(content *hcl.BodyContent, block string, path ...string) *hcl.Range {
	for _, b := range content.Blocks {
		if b.Type == block {
			return rangeIn(b.Body, b.DefRange, path)
		}
	}
	return nil
}

func rangeIn(body hcl.Body, fallback hcl.Range, path []string) *hcl.Range {
	if len(path) == 0 {
		return fallback.Ptr()
	}
	name := path[0]
	schema := &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: name}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: name}},
	}
	content, _, diags := body.PartialContent(schema)
	if diags.HasErrors() {
		// A labelled block such as source "x" { ... }.
		schema.Blocks = []hcl.BlockHeaderSchema{{Type: name, LabelNames: []string{"name"}}}
		content, _, _ = body.PartialContent(schema)
	}
	if content == nil {
		return fallback.Ptr()
	}
	if a, ok := content.Attributes[name]; ok {
		return a.Expr.Range().Ptr()
	}
	if len(content.Blocks) == 0 {
		return fallback.Ptr()
	}
	b := content.Blocks[0]
	if len(path) == 1 {
		return b.DefRange.Ptr()
	}
	return rangeIn(b.Body, b.DefRange, path[1:])
}
