package standin

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// ProviderSchema is one provider's schema, converted for the plugin protocol.
type ProviderSchema struct {
	// Address is the provider's registry address, e.g.
	// registry.opentofu.org/hetznercloud/hcloud.
	Address     string
	Provider    *tfprotov6.Schema
	Resources   map[string]*tfprotov6.Schema
	DataSources map[string]*tfprotov6.Schema
}

type jsonSchemas struct {
	FormatVersion   string                         `json:"format_version"`
	ProviderSchemas map[string]*jsonProviderSchema `json:"provider_schemas"`
}

// keepAll is the filter of ParseSchema: every type.
func keepAll(string) bool { return true }

// prefixFilter keeps type names starting with one of prefixes.
func prefixFilter(prefixes []string) func(string) bool {
	return func(name string) bool {
		for _, p := range prefixes {
			if p = strings.TrimSpace(p); p != "" && strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
}

type jsonProviderSchema struct {
	Provider *jsonSchema `json:"provider"`
	// Decoded one by one, so a filter (ParseSchemaOnly) skips the work for
	// types it drops.
	ResourceSchemas   map[string]json.RawMessage `json:"resource_schemas"`
	DataSourceSchemas map[string]json.RawMessage `json:"data_source_schemas"`
}

type jsonSchema struct {
	Version int64      `json:"version"`
	Block   *jsonBlock `json:"block"`
}

type jsonBlock struct {
	Attributes map[string]*jsonAttribute `json:"attributes"`
	BlockTypes map[string]*jsonBlockType `json:"block_types"`
	Deprecated bool                      `json:"deprecated"`
}

type jsonAttribute struct {
	Type       json.RawMessage `json:"type"`
	NestedType *jsonNestedType `json:"nested_type"`
	Required   bool            `json:"required"`
	Optional   bool            `json:"optional"`
	Computed   bool            `json:"computed"`
	Sensitive  bool            `json:"sensitive"`
	Deprecated bool            `json:"deprecated"`
}

type jsonNestedType struct {
	Attributes  map[string]*jsonAttribute `json:"attributes"`
	NestingMode string                    `json:"nesting_mode"`
}

type jsonBlockType struct {
	NestingMode string     `json:"nesting_mode"`
	Block       *jsonBlock `json:"block"`
	MinItems    int64      `json:"min_items"`
	MaxItems    int64      `json:"max_items"`
}

// LoadSchemaFile reads a `tofu providers schema -json` file (gzip-compressed
// when its name ends in .gz) and returns the schema of the provider at
// address, or of its only provider when address is "".
func LoadSchemaFile(path, address string) (*ProviderSchema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load provider schema: %w", err)
	}
	s, err := parseNamed(path, data, address, keepAll)
	if err != nil {
		return nil, fmt.Errorf("load provider schema %s: %w", path, err)
	}
	return s, nil
}

// parseNamed parses schema data, gunzipping it first when name ends in .gz,
// keeping the types keep accepts.
func parseNamed(name string, data []byte, address string, keep func(string) bool) (*ProviderSchema, error) {
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("gunzip: %w", err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("gunzip: %w", err)
		}
	}
	return parseSchema(data, address, keep)
}

// ParseSchema converts `tofu providers schema -json` output; see
// LoadSchemaFile.
func ParseSchema(data []byte, address string) (*ProviderSchema, error) {
	return parseSchema(data, address, keepAll)
}

func parseSchema(data []byte, address string, keep func(string) bool) (*ProviderSchema, error) {
	var all jsonSchemas
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, fmt.Errorf("parse provider schema: %w", err)
	}
	if address == "" {
		if len(all.ProviderSchemas) != 1 {
			return nil, fmt.Errorf("parse provider schema: %d providers in the file, name one", len(all.ProviderSchemas))
		}
		for a := range all.ProviderSchemas {
			address = a
		}
	}
	js, ok := all.ProviderSchemas[address]
	if !ok {
		return nil, fmt.Errorf("parse provider schema: no provider %q in the file", address)
	}
	out := &ProviderSchema{Address: address, Resources: map[string]*tfprotov6.Schema{}, DataSources: map[string]*tfprotov6.Schema{}}
	var err error
	if out.Provider, err = convertSchema(js.Provider); err != nil {
		return nil, fmt.Errorf("provider block: %w", err)
	}
	for _, kind := range []struct {
		name string
		raw  map[string]json.RawMessage
		out  map[string]*tfprotov6.Schema
	}{{"resource", js.ResourceSchemas, out.Resources}, {"data source", js.DataSourceSchemas, out.DataSources}} {
		for name, raw := range kind.raw {
			if !keep(name) {
				continue
			}
			var s jsonSchema
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, fmt.Errorf("%s %s: %w", kind.name, name, err)
			}
			if kind.out[name], err = convertSchema(&s); err != nil {
				return nil, fmt.Errorf("%s %s: %w", kind.name, name, err)
			}
		}
	}
	return out, nil
}

func convertSchema(s *jsonSchema) (*tfprotov6.Schema, error) {
	if s == nil || s.Block == nil {
		return &tfprotov6.Schema{Block: &tfprotov6.SchemaBlock{}}, nil
	}
	b, err := convertBlock(s.Block)
	if err != nil {
		return nil, err
	}
	return &tfprotov6.Schema{Version: s.Version, Block: b}, nil
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func convertBlock(b *jsonBlock) (*tfprotov6.SchemaBlock, error) {
	out := &tfprotov6.SchemaBlock{Deprecated: b.Deprecated}
	for _, name := range sortedNames(b.Attributes) {
		a, err := convertAttribute(name, b.Attributes[name])
		if err != nil {
			return nil, err
		}
		out.Attributes = append(out.Attributes, a)
	}
	for _, name := range sortedNames(b.BlockTypes) {
		bt := b.BlockTypes[name]
		inner := &tfprotov6.SchemaBlock{}
		if bt.Block != nil {
			var err error
			if inner, err = convertBlock(bt.Block); err != nil {
				return nil, fmt.Errorf("block %s: %w", name, err)
			}
		}
		mode, ok := map[string]tfprotov6.SchemaNestedBlockNestingMode{
			"single": tfprotov6.SchemaNestedBlockNestingModeSingle,
			"list":   tfprotov6.SchemaNestedBlockNestingModeList,
			"set":    tfprotov6.SchemaNestedBlockNestingModeSet,
			"map":    tfprotov6.SchemaNestedBlockNestingModeMap,
			"group":  tfprotov6.SchemaNestedBlockNestingModeGroup,
		}[bt.NestingMode]
		if !ok {
			return nil, fmt.Errorf("block %s: unknown nesting mode %q", name, bt.NestingMode)
		}
		out.BlockTypes = append(out.BlockTypes, &tfprotov6.SchemaNestedBlock{
			TypeName: name, Block: inner, Nesting: mode, MinItems: bt.MinItems, MaxItems: bt.MaxItems,
		})
	}
	return out, nil
}

func convertAttribute(name string, a *jsonAttribute) (*tfprotov6.SchemaAttribute, error) {
	out := &tfprotov6.SchemaAttribute{
		Name: name, Required: a.Required, Optional: a.Optional, Computed: a.Computed,
		Sensitive: a.Sensitive, Deprecated: a.Deprecated, WriteOnly: isWriteOnly(name, a),
	}
	switch {
	case a.NestedType != nil:
		obj := &tfprotov6.SchemaObject{}
		mode, ok := map[string]tfprotov6.SchemaObjectNestingMode{
			"single": tfprotov6.SchemaObjectNestingModeSingle,
			"list":   tfprotov6.SchemaObjectNestingModeList,
			"set":    tfprotov6.SchemaObjectNestingModeSet,
			"map":    tfprotov6.SchemaObjectNestingModeMap,
		}[a.NestedType.NestingMode]
		if !ok {
			return nil, fmt.Errorf("attribute %s: unknown nesting mode %q", name, a.NestedType.NestingMode)
		}
		obj.Nesting = mode
		for _, n := range sortedNames(a.NestedType.Attributes) {
			na, err := convertAttribute(n, a.NestedType.Attributes[n])
			if err != nil {
				return nil, fmt.Errorf("attribute %s: %w", name, err)
			}
			obj.Attributes = append(obj.Attributes, na)
		}
		out.NestedType = obj
	case len(a.Type) > 0:
		t, err := tftypes.ParseJSONType(a.Type) //nolint:staticcheck // the JSON type syntax is exactly what the schema file holds
		if err != nil {
			return nil, fmt.Errorf("attribute %s: type %s: %w", name, a.Type, err)
		}
		out.Type = t
	default:
		return nil, fmt.Errorf("attribute %s: neither type nor nested_type", name)
	}
	return out, nil
}

// Only returns a copy of the schema with only the resource and data source
// types whose names start with one of prefixes.
func (s *ProviderSchema) Only(prefixes []string) *ProviderSchema {
	keep := prefixFilter(prefixes)
	out := &ProviderSchema{Address: s.Address, Provider: s.Provider, Resources: map[string]*tfprotov6.Schema{}, DataSources: map[string]*tfprotov6.Schema{}}
	for n, r := range s.Resources {
		if keep(n) {
			out.Resources[n] = r
		}
	}
	for n, d := range s.DataSources {
		if keep(n) {
			out.DataSources[n] = d
		}
	}
	return out
}
