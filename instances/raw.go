package instances

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
)

// ErrEncrypted is returned for a state that OpenTofu encrypted when no
// encryption is configured to read it.
var ErrEncrypted = errors.New("the state is encrypted: configure the cloud config's encryption block with its key")

// rawState is the state format OpenTofu and Terraform write (version 4):
// what `tofu state pull` prints and a local backend stores. Unlike
// `tofu show -json` it is read without any provider's schema.
type rawState struct {
	Version          int           `json:"version"`
	TerraformVersion string        `json:"terraform_version"`
	Resources        []rawResource `json:"resources"`
	// EncryptedData is set in an encrypted state.
	EncryptedData json.RawMessage `json:"encrypted_data"`
}

type rawResource struct {
	Module    string        `json:"module"`
	Mode      string        `json:"mode"`
	Type      string        `json:"type"`
	Name      string        `json:"name"`
	Provider  string        `json:"provider"`
	Instances []rawInstance `json:"instances"`
}

type rawInstance struct {
	IndexKey            any               `json:"index_key"`
	Deposed             string            `json:"deposed"`
	Attributes          map[string]any    `json:"attributes"`
	AttributesFlat      map[string]string `json:"attributes_flat"`
	SensitiveAttributes []rawPath         `json:"sensitive_attributes"`
}

// rawPath is one path in sensitive_attributes: steps of get_attr (a
// string value) and index (a {value, type} key).
type rawPath []struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// decodeRawState decodes a raw state document into the shape `tofu show
// -json` prints, which the index maps. What differs from show -json, which
// knows the providers' schemas:
//   - attributes of dynamic type are stored as {"value": ..., "type": ...};
//     they are unwrapped (an object of exactly those two keys whose type is a
//     valid cty type);
//   - only sensitive_attributes (values sensitive in the configuration and
//     those the engine recorded) are marked sensitive, not an attribute that
//     only the provider's schema calls sensitive;
//   - deposed objects (being replaced) are left out.
func decodeRawState(b []byte) (*tfjson.State, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		// No state yet: tofu state pull prints nothing.
		return &tfjson.State{Values: &tfjson.StateValues{RootModule: &tfjson.StateModule{}}}, nil
	}
	// Numbers decode as float64, as terraform-json decodes show -json.
	var raw rawState
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("decode state: %w", err)
	}
	if len(raw.EncryptedData) > 0 {
		return nil, ErrEncrypted
	}
	if raw.Version != 4 {
		return nil, fmt.Errorf("decode state: format version %d is not supported (OpenTofu and Terraform >= 0.12 write version 4)", raw.Version)
	}
	modules := map[string]*tfjson.StateModule{"": {}}
	var module func(addr string) *tfjson.StateModule
	module = func(addr string) *tfjson.StateModule {
		if m, ok := modules[addr]; ok {
			return m
		}
		m := &tfjson.StateModule{Address: addr}
		modules[addr] = m
		parent := module(parentModule(addr))
		parent.ChildModules = append(parent.ChildModules, m)
		return m
	}
	for _, r := range raw.Resources {
		mod := module(r.Module)
		for _, in := range r.Instances {
			if in.Deposed != "" {
				continue
			}
			res, err := rawInstanceResource(&r, &in)
			if err != nil {
				return nil, err
			}
			mod.Resources = append(mod.Resources, res)
		}
	}
	for _, m := range modules {
		sort.Slice(m.ChildModules, func(i, j int) bool { return m.ChildModules[i].Address < m.ChildModules[j].Address })
	}
	return &tfjson.State{
		FormatVersion:    "1.0",
		TerraformVersion: raw.TerraformVersion,
		Values:           &tfjson.StateValues{RootModule: modules[""]},
	}, nil
}

func rawInstanceResource(r *rawResource, in *rawInstance) (*tfjson.StateResource, error) {
	addr := r.Type + "." + r.Name
	if r.Mode == "data" {
		addr = "data." + addr
	}
	if r.Module != "" {
		addr = r.Module + "." + addr
	}
	index := in.IndexKey
	switch k := index.(type) {
	case string:
		addr += "[" + strconv.Quote(k) + "]"
	case float64:
		addr += "[" + strconv.FormatFloat(k, 'f', -1, 64) + "]"
	}
	values := in.Attributes
	if values == nil && in.AttributesFlat != nil {
		values = make(map[string]any, len(in.AttributesFlat))
		for k, v := range in.AttributesFlat {
			values[k] = v
		}
	}
	for k, v := range values {
		values[k] = unwrapDynamic(v)
	}
	var sens json.RawMessage
	if len(in.SensitiveAttributes) > 0 {
		var tree any
		for _, p := range in.SensitiveAttributes {
			tree = markPath(tree, p)
		}
		b, err := json.Marshal(tree)
		if err != nil {
			return nil, fmt.Errorf("decode state: %s: sensitive_attributes: %w", addr, err)
		}
		sens = b
	}
	return &tfjson.StateResource{
		Address:         addr,
		Mode:            tfjson.ResourceMode(r.Mode),
		Type:            r.Type,
		Name:            r.Name,
		Index:           index,
		ProviderName:    providerName(r.Provider),
		AttributeValues: values,
		SensitiveValues: sens,
	}, nil
}

// parentModule is the address of the module that contains addr
// ("module.a.module.b" -> "module.a"; "module.a" -> "").
func parentModule(addr string) string {
	i := strings.LastIndex(addr, ".module.")
	if i < 0 {
		return ""
	}
	return addr[:i]
}

// providerName turns a state's provider address
// (module.x.provider["registry.opentofu.org/bpg/proxmox"].alias) into the
// provider name show -json prints (registry.opentofu.org/bpg/proxmox).
func providerName(s string) string {
	i := strings.Index(s, `provider["`)
	if i < 0 {
		return s
	}
	rest := s[i+len(`provider["`):]
	if j := strings.Index(rest, `"]`); j >= 0 {
		return rest[:j]
	}
	return s
}

// unwrapDynamic replaces the {"value", "type"} encoding of a value of
// dynamic type by the value, recursively.
func unwrapDynamic(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 2 {
			if t, ok := v["type"]; ok {
				if val, ok := v["value"]; ok && ctyType(t) {
					return unwrapDynamic(val)
				}
			}
		}
		for k, e := range v {
			v[k] = unwrapDynamic(e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = unwrapDynamic(e)
		}
		return v
	default:
		return v
	}
}

// ctyType reports whether t is a cty type in its JSON encoding (as
// ctyjson.UnmarshalType reads it), without re-encoding it.
func ctyType(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "string" || t == "number" || t == "bool" || t == "dynamic"
	case []any:
		if len(t) < 2 {
			return false
		}
		kind, _ := t[0].(string)
		switch kind {
		case "list", "set", "map":
			return len(t) == 2 && ctyType(t[1])
		case "object":
			attrs, ok := t[1].(map[string]any)
			if !ok || len(t) > 3 {
				return false
			}
			for _, a := range attrs {
				if !ctyType(a) {
					return false
				}
			}
			return true
		case "tuple":
			elems, ok := t[1].([]any)
			if !ok || len(t) != 2 {
				return false
			}
			for _, e := range elems {
				if !ctyType(e) {
					return false
				}
			}
			return true
		}
	}
	return false
}

// markPath sets true at path p in a sensitive_values tree (objects and
// arrays shaped like the values).
func markPath(tree any, p rawPath) any {
	if len(p) == 0 {
		return true
	}
	if b, ok := tree.(bool); ok && b {
		return tree // already sensitive as a whole
	}
	step := p[0]
	switch step.Type {
	case "get_attr":
		var name string
		if json.Unmarshal(step.Value, &name) != nil {
			return true // unknown step: mark the whole value
		}
		m, _ := tree.(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		m[name] = markPath(m[name], p[1:])
		return m
	case "index":
		var key struct {
			Value any    `json:"value"`
			Type  string `json:"type"`
		}
		if json.Unmarshal(step.Value, &key) != nil {
			return true
		}
		switch k := key.Value.(type) {
		case string:
			m, _ := tree.(map[string]any)
			if m == nil {
				m = map[string]any{}
			}
			m[k] = markPath(m[k], p[1:])
			return m
		case float64:
			i := int(k)
			if i < 0 || float64(i) != k || i > 1<<16 {
				return true
			}
			a, _ := tree.([]any)
			for len(a) <= i {
				a = append(a, false)
			}
			a[i] = markPath(a[i], p[1:])
			return a
		}
	}
	return true
}
