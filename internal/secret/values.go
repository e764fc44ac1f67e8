package secret

import (
	"encoding/json"
	"fmt"
)

// minLen is the shortest value the walker reports for scrubbing: shorter
// sensitive strings and numbers would erase unrelated words from every
// message. Redact still masks them in values.
const minLen = 4

// Strings lists the strings and longer numbers inside a JSON value that
// is sensitive as a whole (and the raw value itself, for non-strings), so
// any of them can be scrubbed from messages.
func Strings(raw json.RawMessage) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return []string{string(raw)}
	}
	var out []string
	Collect(v, true, &out)
	if _, isString := v.(string); !isString && len(raw) >= minLen {
		out = append(out, string(raw))
	}
	return out
}

// Collect appends to out the leaves of v (strings, and numbers of minLen
// digits or more) that mask marks sensitive. mask has Redact's shape: true
// (all of v), false/nil (none), or an object/array shaped like v.
func Collect(v, mask any, out *[]string) {
	collect(v, mask, false, out)
}

func collect(v, mask any, all bool, out *[]string) {
	if b, ok := mask.(bool); ok && b {
		all = true
	}
	switch x := v.(type) {
	case string:
		if all && len(x) >= minLen {
			*out = append(*out, x)
		}
	case map[string]any:
		m, _ := mask.(map[string]any)
		for k, sub := range x {
			collect(sub, m[k], all, out)
		}
	case []any:
		m, _ := mask.([]any)
		for i, sub := range x {
			var sm any
			if i < len(m) {
				sm = m[i]
			}
			collect(sub, sm, all, out)
		}
	case nil, bool:
	default:
		if s := fmt.Sprint(x); all && len(s) >= minLen {
			*out = append(*out, s)
		}
	}
}

// Redact returns v with the parts mask marks sensitive replaced by
// Placeholder. mask is true (all of v), false/nil (none), or an
// object/array of the same shape as v; an unexpected shape redacts all of
// v. null stays null.
func Redact(v, mask any) any {
	switch m := mask.(type) {
	case nil:
		return v
	case bool:
		if m && v != nil {
			return Placeholder
		}
		return v
	case map[string]any:
		obj, ok := v.(map[string]any)
		if !ok {
			return redactAll(v)
		}
		out := make(map[string]any, len(obj))
		for k, x := range obj {
			out[k] = Redact(x, m[k])
		}
		return out
	case []any:
		arr, ok := v.([]any)
		if !ok {
			return redactAll(v)
		}
		out := make([]any, len(arr))
		for i, x := range arr {
			var sub any
			if i < len(m) {
				sub = m[i]
			}
			out[i] = Redact(x, sub)
		}
		return out
	default:
		return redactAll(v)
	}
}

func redactAll(v any) any {
	if v == nil {
		return nil
	}
	return Placeholder
}
