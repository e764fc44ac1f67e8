package standin

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// markComputedUnknown returns v with every computed attribute that has no
// value (null) replaced by an unknown value: what a provider plans for
// attributes only the cloud knows.
func markComputedUnknown(b *tfprotov6.SchemaBlock, v tftypes.Value) (tftypes.Value, error) {
	if v.IsNull() || !v.IsKnown() {
		return v, nil
	}
	var m map[string]tftypes.Value
	if err := v.As(&m); err != nil {
		return v, fmt.Errorf("block value: %w", err)
	}
	for _, a := range b.Attributes {
		av, ok := m[a.Name]
		if !ok {
			continue
		}
		if av.IsNull() && a.Computed {
			m[a.Name] = tftypes.NewValue(a.ValueType(), tftypes.UnknownValue)
			continue
		}
		if a.NestedType != nil {
			nv, err := mapNested(av, func(obj tftypes.Value) (tftypes.Value, error) {
				return markComputedUnknown(&tfprotov6.SchemaBlock{Attributes: a.NestedType.Attributes}, obj)
			})
			if err != nil {
				return v, fmt.Errorf("attribute %s: %w", a.Name, err)
			}
			m[a.Name] = nv
		}
	}
	for _, bt := range b.BlockTypes {
		bv, ok := m[bt.TypeName]
		if !ok {
			continue
		}
		nv, err := mapNested(bv, func(obj tftypes.Value) (tftypes.Value, error) {
			return markComputedUnknown(bt.Block, obj)
		})
		if err != nil {
			return v, fmt.Errorf("block %s: %w", bt.TypeName, err)
		}
		m[bt.TypeName] = nv
	}
	return tftypes.NewValue(v.Type(), m), nil
}

// mapNested applies f to the object(s) of a nested block or nested
// attribute value, whatever its nesting (single object, list, set or map).
func mapNested(v tftypes.Value, f func(tftypes.Value) (tftypes.Value, error)) (tftypes.Value, error) {
	if v.IsNull() || !v.IsKnown() {
		return v, nil
	}
	t := v.Type()
	switch {
	case t.Is(tftypes.List{}) || t.Is(tftypes.Set{}) || t.Is(tftypes.Tuple{}):
		var elems []tftypes.Value
		if err := v.As(&elems); err != nil {
			return v, err
		}
		for i := range elems {
			e, err := f(elems[i])
			if err != nil {
				return v, err
			}
			elems[i] = e
		}
		return tftypes.NewValue(t, elems), nil
	case t.Is(tftypes.Map{}):
		var elems map[string]tftypes.Value
		if err := v.As(&elems); err != nil {
			return v, err
		}
		for k := range elems {
			e, err := f(elems[k])
			if err != nil {
				return v, err
			}
			elems[k] = e
		}
		return tftypes.NewValue(t, elems), nil
	default:
		return f(v)
	}
}

// generator invents the values of unknown attributes at apply time.
type generator struct {
	address  string // provider address
	typeName string
	seed     []byte // the planned values, so different objects get different values
	fixture  map[string]json.RawMessage
	// lookup: a data source read; lists of objects get one element
	// (resources get empty collections).
	lookup bool
}

// fill replaces every unknown value in v by a generated one.
func (g *generator) fill(v tftypes.Value) (tftypes.Value, error) {
	return tftypes.Transform(v, func(p *tftypes.AttributePath, v tftypes.Value) (tftypes.Value, error) {
		if v.IsKnown() {
			return v, nil
		}
		return g.generate(p, v.Type())
	})
}

// attrName is the last attribute name on the path ("" for none).
func attrName(p *tftypes.AttributePath) string {
	steps := p.Steps()
	for i := len(steps) - 1; i >= 0; i-- {
		if n, ok := steps[i].(tftypes.AttributeName); ok {
			return string(n)
		}
	}
	return ""
}

// attrPath is the path's attribute names joined by dots, element keys left
// out: "ipv4", "forwarding_rule.certificate_id".
func attrPath(p *tftypes.AttributePath) string {
	var names []string
	for _, st := range p.Steps() {
		if n, ok := st.(tftypes.AttributeName); ok {
			names = append(names, string(n))
		}
	}
	return strings.Join(names, ".")
}

func (g *generator) hash(p *tftypes.AttributePath) uint64 {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", g.address, g.typeName, p.String())
	h.Write(g.seed)
	return binary.BigEndian.Uint64(h.Sum(nil)[:8])
}

func (g *generator) generate(p *tftypes.AttributePath, t tftypes.Type) (tftypes.Value, error) {
	name := attrName(p)
	if raw, ok := g.fixture[attrPath(p)]; ok {
		v, err := tftypes.ValueFromJSON(raw, t) //nolint:staticcheck // plain JSON values of the attribute's type
		if err != nil {
			return v, fmt.Errorf("fixture %s.%s: %w", g.typeName, name, err)
		}
		return v, nil
	}
	n := g.hash(p)
	switch {
	case t.Is(tftypes.String):
		return tftypes.NewValue(t, g.stringValue(name, n)), nil
	case t.Is(tftypes.Number):
		if name == "id" || strings.HasSuffix(name, "_id") || strings.HasSuffix(name, "_ipv4") || strings.HasSuffix(name, "_ipv6") ||
			name == "ipv4" || name == "ipv6" {
			return tftypes.NewValue(t, new(big.Float).SetUint64(1000000+n%9000000)), nil
		}
		return tftypes.NewValue(t, new(big.Float).SetInt64(0)), nil
	case t.Is(tftypes.Bool):
		return tftypes.NewValue(t, false), nil
	case t.Is(tftypes.List{}), t.Is(tftypes.Set{}):
		var elem tftypes.Type
		if l, ok := t.(tftypes.List); ok {
			elem = l.ElementType
		} else {
			elem = t.(tftypes.Set).ElementType
		}
		if g.lookup && elem.Is(tftypes.Object{}) {
			// A data source looking objects up finds one.
			e, err := g.generate(p.WithElementKeyInt(0), elem)
			if err != nil {
				return e, err
			}
			return tftypes.NewValue(t, []tftypes.Value{e}), nil
		}
		return tftypes.NewValue(t, []tftypes.Value{}), nil
	case t.Is(tftypes.Tuple{}):
		return tftypes.NewValue(t, []tftypes.Value{}), nil
	case t.Is(tftypes.Map{}):
		return tftypes.NewValue(t, map[string]tftypes.Value{}), nil
	case t.Is(tftypes.Object{}):
		ot := t.(tftypes.Object)
		m := map[string]tftypes.Value{}
		for an, at := range ot.AttributeTypes {
			v, err := g.generate(p.WithAttributeName(an), at)
			if err != nil {
				return v, err
			}
			m[an] = v
		}
		return tftypes.NewValue(t, m), nil
	case t.Is(tftypes.DynamicPseudoType):
		return tftypes.NewValue(tftypes.String, g.stringValue(name, n)), nil
	}
	return tftypes.Value{}, fmt.Errorf("%s: cannot invent a value of type %s", p, t)
}

// stringValue invents a plausible string for an attribute by its name.
func (g *generator) stringValue(name string, n uint64) string {
	oci := strings.HasSuffix(g.address, "oracle/oci")
	switch {
	case name == "id" && oci, strings.HasSuffix(name, "_id") && oci:
		kind := strings.TrimPrefix(g.typeName, "oci_")
		kind = strings.ReplaceAll(strings.TrimPrefix(kind, "core_"), "_", "")
		if g.lookup {
			kind = strings.TrimSuffix(kind, "s") // oci_core_private_ips finds privateip objects
		}
		return fmt.Sprintf("ocid1.%s.oc1.standin.%016x", kind, n)
	case name == "id" || strings.HasSuffix(name, "_id"):
		return fmt.Sprint(1000000 + n%9000000)
	case name == "urn":
		return fmt.Sprintf("do:%s:%d", strings.TrimPrefix(g.typeName, "digitalocean_"), 1000000+n%9000000)
	case strings.Contains(name, "ipv6") && (strings.Contains(name, "network") || strings.Contains(name, "range") || strings.Contains(name, "cidr")):
		return fmt.Sprintf("2001:db8:%x::/64", n%0xffff)
	case strings.Contains(name, "ipv6"):
		return fmt.Sprintf("2001:db8:%x::1", n%0xffff)
	case strings.Contains(name, "cidr") || strings.Contains(name, "ip_range"):
		return fmt.Sprintf("10.%d.0.0/16", n%250)
	case strings.Contains(name, "private") && (strings.Contains(name, "ip") || strings.Contains(name, "address")):
		return fmt.Sprintf("10.%d.%d.%d", 100+n%100, (n>>8)%256, 2+(n>>16)%250)
	case name == "ip" || strings.Contains(name, "ipv4") || strings.Contains(name, "ip_address") ||
		strings.HasSuffix(name, "_ip") || strings.HasPrefix(name, "ip_") || name == "gateway" || name == "address":
		return fmt.Sprintf("203.0.113.%d", 1+n%254)
	case strings.Contains(name, "hostname") || strings.Contains(name, "fqdn") || strings.Contains(name, "dns"):
		return fmt.Sprintf("h%08x.standin.example", uint32(n))
	case name == "lifecycle_state":
		return "ACTIVE"
	case name == "status" || name == "state":
		return "active"
	case strings.HasPrefix(name, "time_") || strings.HasPrefix(name, "created") || strings.HasSuffix(name, "_at"):
		return "2026-01-01T00:00:00Z"
	case name == "mac_address":
		return fmt.Sprintf("02:00:%02x:%02x:%02x:%02x", byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return fmt.Sprintf("standin-%s-%08x", name, uint32(n))
}

// toJSON converts a value to plain JSON data for the call log and seeds:
// objects and maps become maps, lists/sets/tuples slices, numbers
// json.Number, unknown values the string "(unknown)".
func toJSON(v tftypes.Value) any {
	if !v.IsKnown() {
		return "(unknown)"
	}
	if v.IsNull() {
		return nil
	}
	t := v.Type()
	switch {
	case t.Is(tftypes.String):
		var s string
		_ = v.As(&s)
		return s
	case t.Is(tftypes.Number):
		var f big.Float
		_ = v.As(&f)
		return json.Number(f.Text('f', -1))
	case t.Is(tftypes.Bool):
		var b bool
		_ = v.As(&b)
		return b
	case t.Is(tftypes.List{}), t.Is(tftypes.Set{}), t.Is(tftypes.Tuple{}):
		var elems []tftypes.Value
		_ = v.As(&elems)
		out := make([]any, 0, len(elems))
		for _, e := range elems {
			out = append(out, toJSON(e))
		}
		return out
	case t.Is(tftypes.Map{}), t.Is(tftypes.Object{}):
		var elems map[string]tftypes.Value
		_ = v.As(&elems)
		out := make(map[string]any, len(elems))
		for k, e := range elems {
			out[k] = toJSON(e)
		}
		return out
	}
	return v.String()
}

// stringAttr returns a top-level string (or number) attribute of an object
// value as a string, "" when absent or null.
func stringAttr(v tftypes.Value, name string) string {
	if v.IsNull() || !v.IsKnown() {
		return ""
	}
	var m map[string]tftypes.Value
	if err := v.As(&m); err != nil {
		return ""
	}
	a, ok := m[name]
	if !ok || a.IsNull() || !a.IsKnown() {
		return ""
	}
	switch j := toJSON(a).(type) {
	case string:
		return j
	case json.Number:
		return j.String()
	}
	return ""
}

// withAttr returns object v with attribute name set to value.
func withAttr(v tftypes.Value, name string, value tftypes.Value) (tftypes.Value, error) {
	var m map[string]tftypes.Value
	if err := v.As(&m); err != nil {
		return v, err
	}
	m[name] = value
	return tftypes.NewValue(v.Type(), m), nil
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
