package standin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// TestRules: the checks OpenTofu leaves to providers, on a small block
// (attributes a, b, c, required r, port, kind; nested block n with required
// x), one case per kind of rule.
func TestRules(t *testing.T) {
	nested := &tfprotov6.SchemaBlock{Attributes: []*tfprotov6.SchemaAttribute{{Name: "x", Type: tftypes.String, Required: true}}}
	block := &tfprotov6.SchemaBlock{
		Attributes: []*tfprotov6.SchemaAttribute{
			{Name: "a", Type: tftypes.String, Optional: true}, {Name: "b", Type: tftypes.String, Optional: true},
			{Name: "c", Type: tftypes.String, Optional: true}, {Name: "r", Type: tftypes.String, Required: true},
			{Name: "port", Type: tftypes.Number, Optional: true}, {Name: "kind", Type: tftypes.String, Optional: true},
		},
		BlockTypes: []*tfprotov6.SchemaNestedBlock{{TypeName: "n", Nesting: tfprotov6.SchemaNestedBlockNestingModeList, Block: nested}},
	}
	objType := block.ValueType().(tftypes.Object)
	nType := objType.AttributeTypes["n"]
	str := func(s any) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	value := func(attrs map[string]tftypes.Value) tftypes.Value {
		m := map[string]tftypes.Value{}
		for name, at := range objType.AttributeTypes {
			m[name] = tftypes.NewValue(at, nil)
		}
		m["r"] = str("set")
		m["n"] = tftypes.NewValue(nType, []tftypes.Value{})
		for k, v := range attrs {
			m[k] = v
		}
		return tftypes.NewValue(objType, m)
	}
	nestedX := func(x any) tftypes.Value {
		return tftypes.NewValue(nType, []tftypes.Value{tftypes.NewValue(nested.ValueType(), map[string]tftypes.Value{"x": str(x)})})
	}
	rules := []rule{
		exactlyOneOf("doc-exactly", "a", "b"),
		conflictsWith("doc-conflicts", "b", "c"),
		atLeastOneOf("doc-at-least", "a", "b", "c"),
		valueOneOf("doc-one-of", "kind", "TCP", "UDP"),
		intBetween("doc-between", "port", 1, 65535),
	}
	tests := []struct {
		name  string
		attrs map[string]tftypes.Value
		want  string // "" = no diagnostics
	}{
		{"valid", map[string]tftypes.Value{"a": str("1"), "kind": str("TCP"), "port": tftypes.NewValue(tftypes.Number, 80)}, ""},
		{"required null", map[string]tftypes.Value{"a": str("1"), "r": str(nil)}, `The argument "r" is required, but no definition was found.`},
		{"required unknown is not refused", map[string]tftypes.Value{"a": str("1"), "r": str(tftypes.UnknownValue)}, ""},
		{"nested required null", map[string]tftypes.Value{"a": str("1"), "n": nestedX(nil)}, `The argument "n.x" is required`},
		{"exactly one: none", nil, `one of "a", "b" must be specified (doc-exactly)`},
		{"exactly one: unknown may be the one", map[string]tftypes.Value{"b": str(tftypes.UnknownValue)}, ""},
		{"exactly one: two", map[string]tftypes.Value{"a": str("1"), "b": str("2")}, `only one of "a", "b" can be specified, but a, b were specified (doc-exactly)`},
		{"conflicts", map[string]tftypes.Value{"b": str("2"), "c": str("3")}, `only one of "b", "c" can be specified, but b, c were specified (doc-conflicts)`},
		{"value not allowed", map[string]tftypes.Value{"a": str("1"), "kind": str("SCTP")}, `expected kind to be one of ["TCP" "UDP"], got SCTP (doc-one-of)`},
		{"value unknown", map[string]tftypes.Value{"a": str("1"), "kind": str(tftypes.UnknownValue)}, ""},
		{"out of range", map[string]tftypes.Value{"a": str("1"), "port": tftypes.NewValue(tftypes.Number, 70000)}, `expected port to be in the range (1 - 65535), got 70000 (doc-between)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diags := validateConfig(block, rules, value(tt.attrs))
			var got []string
			for _, d := range diags {
				got = append(got, d.Detail)
			}
			all := strings.Join(got, "\n")
			if tt.want == "" && len(diags) > 0 || tt.want != "" && !strings.Contains(all, tt.want) {
				t.Errorf("diagnostics:\n%s\nwant %q", all, tt.want)
			}
		})
	}
}

// TestRulesNameRealAttributes: every rule, lookup rule and deprecation
// names attributes and blocks that exist in the served schema, so a schema
// update cannot leave a rule checking nothing.
func TestRulesNameRealAttributes(t *testing.T) {
	schemas := map[string]*ProviderSchema{}
	for _, p := range Known {
		s, err := LoadKnownSchema(p)
		if err != nil {
			t.Fatal(err)
		}
		schemas[p.Name] = s
	}
	find := func(typ string, data bool) *tfprotov6.SchemaBlock {
		s := schemas[strings.SplitN(typ, "_", 2)[0]]
		if s == nil {
			return nil
		}
		m := s.Resources
		if data {
			m = s.DataSources
		}
		if r, ok := m[typ]; ok {
			return r.Block
		}
		return nil
	}
	has := func(b *tfprotov6.SchemaBlock, block, name string) bool {
		for _, bn := range strings.Split(block, ".") {
			if bn != "" && b != nil {
				b = nestedBlock(b, bn)
			}
		}
		return b != nil && (hasAttr(b, name) || nestedBlock(b, name) != nil)
	}
	for kind, table := range map[string]map[string][]rule{"resource": resourceRules, "data source": lookupRules} {
		for typ, rules := range table {
			b := find(typ, kind == "data source")
			if b == nil {
				t.Errorf("%s %s is not in any served schema", kind, typ)
				continue
			}
			for _, r := range rules {
				for _, a := range r.attrs {
					if !has(b, r.block, a) {
						t.Errorf("%s %s: rule %q names %s.%s, which the schema lacks", kind, typ, r.doc, r.block, a)
					}
				}
			}
		}
	}
	for typ, paths := range deprecatedAttributes {
		for _, p := range paths {
			block, name := at(p)
			if b := find(typ, false); b == nil || !has(b, block, name) {
				t.Errorf("deprecated %s %s is not in the schema", typ, p)
			}
		}
	}
}

// TestProviderErrorComesFirst: a required argument set to null is the
// provider's error when the plan reaches the resource, before the
// precondition of a resource that depends on it (what the real oci
// provider does with an NSG whose vcn_id is null), and a rule of the
// table refuses a conflicting configuration at plan.
func TestProviderErrorComesFirst(t *testing.T) {
	e := Setup(t, "oci")
	e.Only = []string{"oci_core_network_security_group", "oci_core_public_ip"}
	dir := writeConfig(t, `terraform {
  required_providers {
    oci = { source = "oracle/oci" }
  }
}

variable "vcn_id" {
  type    = string
  default = null
}

resource "oci_core_network_security_group" "nsg" {
  compartment_id = "ocid1.compartment.oc1..x"
  vcn_id         = var.vcn_id
}

resource "oci_core_public_ip" "ip" {
  compartment_id = "ocid1.compartment.oc1..x"
  lifetime       = "RESERVED"
  display_name   = oci_core_network_security_group.nsg.id

  lifecycle {
    precondition {
      condition     = var.vcn_id != null
      error_message = "The set's own message: set vcn_id."
    }
  }
}
`)
	e.Tofu(t, dir, "init", "-input=false", "-no-color")
	e.Tofu(t, dir, "validate", "-no-color") // unknown variables: nothing to refuse yet
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := e.Run(ctx, dir, "plan", "-input=false", "-no-color")
	var te *TofuError
	if !errors.As(err, &te) {
		t.Fatalf("plan accepted a null required argument (err %v)", err)
	}
	got := strings.Join(strings.Fields(te.Stderr), " ")
	if !strings.Contains(got, `Missing required argument`) || !strings.Contains(got, `The argument "vcn_id" is required, but no definition was found.`) {
		t.Errorf("plan error lacks the provider's message:\n%s", te.Stderr)
	}
	if strings.Contains(got, "The set's own message") {
		t.Errorf("the dependent resource's precondition was reached first:\n%s", te.Stderr)
	}
	e.Tofu(t, dir, "plan", "-input=false", "-no-color", "-var", "vcn_id=ocid1.vcn.oc1..x")
}
