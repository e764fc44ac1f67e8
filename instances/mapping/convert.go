package mapping

import (
	"encoding/json"
	"fmt"

	"github.com/zclconf/go-cty/cty"
)

// sensitiveMark marks values Terraform recorded as sensitive.
type sensitiveMark struct{}

var sensitive = sensitiveMark{}

// resourceValue builds the `resource` object for r and reports whether any
// of its attributes is sensitive.
func resourceValue(r *Resource) (cty.Value, bool, error) {
	var sens any
	if len(r.Sensitive) > 2 { // "{}" and "[]" carry nothing
		if err := json.Unmarshal(r.Sensitive, &sens); err != nil {
			return cty.NilVal, false, fmt.Errorf("decode sensitive_values: %w", err)
		}
	}
	values := cty.EmptyObjectVal
	if len(r.Values) > 0 {
		values = toCty(map[string]any(r.Values), sens)
	}
	idx := cty.NullVal(cty.DynamicPseudoType)
	if r.Index != nil {
		idx = toCty(r.Index, nil)
	}
	return cty.ObjectVal(map[string]cty.Value{
		"address":  cty.StringVal(r.Address),
		"mode":     cty.StringVal(r.Mode),
		"type":     cty.StringVal(r.Type),
		"name":     cty.StringVal(r.Name),
		"module":   cty.StringVal(r.Module),
		"provider": cty.StringVal(r.Provider),
		"index":    idx,
		"values":   values,
	}), anySensitive(sens), nil
}

// anySensitive reports whether a sensitive_values structure flags anything.
func anySensitive(sens any) bool {
	switch s := sens.(type) {
	case bool:
		return s
	case []any:
		for _, e := range s {
			if anySensitive(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range s {
			if anySensitive(e) {
				return true
			}
		}
	}
	return false
}

// toCty converts a JSON-decoded value to cty, marking the parts sens (the
// matching sensitive_values structure) flags as sensitive.
func toCty(v any, sens any) cty.Value {
	if b, ok := sens.(bool); ok && b {
		return toCty(v, nil).Mark(sensitive)
	}
	switch v := v.(type) {
	case nil:
		return cty.NullVal(cty.DynamicPseudoType)
	case bool:
		return cty.BoolVal(v)
	case string:
		return cty.StringVal(v)
	case float64:
		return cty.NumberFloatVal(v)
	case int:
		return cty.NumberIntVal(int64(v))
	case int64:
		return cty.NumberIntVal(v)
	case json.Number:
		n, err := cty.ParseNumberVal(string(v))
		if err != nil {
			return cty.StringVal(string(v))
		}
		return n
	case []any:
		if len(v) == 0 {
			return cty.EmptyTupleVal
		}
		sl, _ := sens.([]any)
		elems := make([]cty.Value, len(v))
		for i, e := range v {
			var s any
			if i < len(sl) {
				s = sl[i]
			}
			elems[i] = toCty(e, s)
		}
		return cty.TupleVal(elems)
	case map[string]any:
		if len(v) == 0 {
			return cty.EmptyObjectVal
		}
		sm, _ := sens.(map[string]any)
		attrs := make(map[string]cty.Value, len(v))
		for k, e := range v {
			attrs[k] = toCty(e, sm[k])
		}
		return cty.ObjectVal(attrs)
	default:
		// Not produced by encoding/json; keep it visible rather than lose it.
		return cty.StringVal(fmt.Sprint(v))
	}
}
