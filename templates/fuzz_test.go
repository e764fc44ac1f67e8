package templates

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"golang.org/x/text/unicode/norm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// checkTfvars proves that src (a rendered tfvars file) is pure data: its
// tokens hold no template interpolation or directive and no heredoc, every
// expression is a literal, tuple or object of literals, and each attribute
// evaluates, with no variables or functions, to exactly want[name].
func checkTfvars(t *testing.T, src []byte, want map[string]cty.Value) {
	t.Helper()
	toks, ldiags := hclsyntax.LexConfig(src, "tfccm.auto.tfvars", hcl.InitialPos)
	if ldiags.HasErrors() {
		t.Fatalf("lex: %s", ldiags)
	}
	for _, tok := range toks {
		switch tok.Type {
		case hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl, hclsyntax.TokenOHeredoc, hclsyntax.TokenInvalid, hclsyntax.TokenBadUTF8:
			t.Fatalf("token %s %q at %s in:\n%s", tok.Type, tok.Bytes, tok.Range, src)
		}
	}
	f, diags := hclsyntax.ParseConfig(src, "tfccm.auto.tfvars", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("rendered tfvars does not parse: %s\n%s", diags, src)
	}
	body := f.Body.(*hclsyntax.Body)
	if len(body.Blocks) != 0 {
		t.Fatalf("tfvars has blocks")
	}
	if len(body.Attributes) != len(want) {
		t.Fatalf("tfvars has %d attributes, want %d", len(body.Attributes), len(want))
	}
	for name, a := range body.Attributes {
		if err := literalOnly(a.Expr); err != nil {
			t.Fatalf("attribute %s: %v", name, err)
		}
		got, d := a.Expr.Value(nil)
		if d.HasErrors() {
			t.Fatalf("attribute %s does not evaluate without context: %s", name, d)
		}
		w, ok := want[name]
		if !ok {
			t.Fatalf("unexpected attribute %s", name)
		}
		// Parsed collections come back as tuples/objects: compare after
		// conversion to the written type.
		if !sameValue(got, w) {
			t.Fatalf("attribute %s round-trips to\n%#v\nwant\n%#v", name, got, w)
		}
	}
}

// sameValue compares a parsed value (tuples, objects) with the written one
// (lists, maps, objects) structurally.
func sameValue(got, want cty.Value) bool {
	if want.IsNull() || got.IsNull() {
		return want.IsNull() && got.IsNull()
	}
	wt := want.Type()
	switch {
	case wt == cty.String:
		return got.Type() == cty.String && got.AsString() == want.AsString()
	case wt == cty.Number:
		return got.Type() == cty.Number && got.AsBigFloat().Cmp(want.AsBigFloat()) == 0
	case wt == cty.Bool:
		return got.Type() == cty.Bool && got.True() == want.True()
	case wt.IsListType() || wt.IsTupleType():
		if !(got.Type().IsTupleType() || got.Type().IsListType()) || got.LengthInt() != want.LengthInt() {
			return false
		}
		g, w := got.AsValueSlice(), want.AsValueSlice()
		for i := range w {
			if !sameValue(g[i], w[i]) {
				return false
			}
		}
		return true
	case wt.IsMapType() || wt.IsObjectType():
		if !(got.Type().IsObjectType() || got.Type().IsMapType()) || got.LengthInt() != want.LengthInt() {
			return false
		}
		g, w := got.AsValueMap(), want.AsValueMap()
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !sameValue(gv, wv) {
				return false
			}
		}
		return true
	}
	return false
}

// literalOnly accepts only literal data: quoted strings without
// interpolation, numbers, bools, null, tuples and objects of them.
func literalOnly(e hclsyntax.Expression) error {
	switch x := e.(type) {
	case *hclsyntax.LiteralValueExpr:
		return nil
	case *hclsyntax.TemplateExpr:
		for _, p := range x.Parts {
			if _, ok := p.(*hclsyntax.LiteralValueExpr); !ok {
				return fmt.Errorf("template part %T at %s", p, p.Range())
			}
		}
		return nil
	case *hclsyntax.TupleConsExpr:
		for _, el := range x.Exprs {
			if err := literalOnly(el); err != nil {
				return err
			}
		}
		return nil
	case *hclsyntax.ObjectConsExpr:
		for _, it := range x.Items {
			k, ok := it.KeyExpr.(*hclsyntax.ObjectConsKeyExpr)
			if !ok || k.ForceNonLiteral {
				return fmt.Errorf("non-literal object key at %s", it.KeyExpr.Range())
			}
			switch kw := k.Wrapped.(type) {
			case *hclsyntax.ScopeTraversalExpr:
				if len(kw.Traversal) != 1 {
					return fmt.Errorf("traversal key at %s", kw.Range())
				}
			default:
				if err := literalOnly(kw); err != nil {
					return fmt.Errorf("key: %w", err)
				}
			}
			if err := literalOnly(it.ValueExpr); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("expression %T at %s is not a literal", e, e.Range())
}

// FuzzRenderLoadBalancer renders Services and Nodes carrying arbitrary
// names, annotations, labels and ports, and proves that every rendered
// input is pure data that parses back to exactly the original value.
func FuzzRenderLoadBalancer(f *testing.F) {
	f.Add("web", "example.com/owner", "team", "http", "node-a", "zone", "a", uint16(80), uint16(30080))
	f.Add("${var.x}", "x/${y}", "%{ if true }x%{ endif }", "$${", "%%{", "a\"b", "c\\d\n", uint16(0), uint16(65535))
	f.Add("<<EOT\nx\nEOT", "key = value", "}\n\nresource \"x\" \"y\" {}", "\t\r", "null", "true", "${file(\"/etc/passwd\")}", uint16(1), uint16(2))
	set := fullSet(f)
	cfg := testConfig(f, baseConfig)
	f.Fuzz(func(t *testing.T, svcName, annKey, annVal, portName, nodeName, labelKey, labelVal string, port, nodePort uint16) {
		for _, s := range []string{svcName, annKey, annVal, portName, nodeName, labelKey, labelVal} {
			if !utf8.ValidString(s) {
				t.Skip("Kubernetes objects decode to valid UTF-8 only")
			}
		}
		s := svc(nil)
		s.Name = svcName
		s.Annotations = map[string]string{annKey: annVal}
		s.Labels = map[string]string{labelKey: labelVal}
		s.Spec.Ports = []corev1.ServicePort{{Name: portName, Protocol: corev1.ProtocolTCP, Port: int32(port), NodePort: int32(nodePort)}}
		nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{labelKey: labelVal}},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: labelVal}}}}}
		ws, err := set.renderLoadBalancer(cfg, s, nodes, Addresses{})
		if err != nil {
			if strings.HasPrefix(annKey, "tfccm.io/") {
				return // our own annotations are validated; rejecting is correct
			}
			t.Fatalf("render: %v", err)
		}
		src := ws.Files[TfvarsFile]
		checkTfvars(t, src, ws.inputs)
		// And the parsed values are the originals (NFC-normalized, as both
		// cty and OpenTofu normalize strings).
		f, _ := hclsyntax.ParseConfig(src, "x", hcl.InitialPos)
		attrs := f.Body.(*hclsyntax.Body).Attributes
		service, _ := attrs["service"].Expr.Value(nil)
		nodesV, _ := attrs["nodes"].Expr.Value(nil)
		n := norm.NFC.String
		checks := []struct {
			what      string
			got, want cty.Value
		}{
			{"service.name", service.GetAttr("name"), cty.StringVal(n(svcName))},
			{"service.annotations[key]", index(service.GetAttr("annotations"), n(annKey)), cty.StringVal(n(annVal))},
			{"service.labels[key]", index(service.GetAttr("labels"), n(labelKey)), cty.StringVal(n(labelVal))},
			{"service.ports[0].name", service.GetAttr("ports").Index(cty.NumberIntVal(0)).GetAttr("name"), cty.StringVal(n(portName))},
			{"service.ports[0].port", service.GetAttr("ports").Index(cty.NumberIntVal(0)).GetAttr("port"), cty.NumberIntVal(int64(port))},
			{"nodes[0].name", nodesV.Index(cty.NumberIntVal(0)).GetAttr("name"), cty.StringVal(n(nodeName))},
			{"nodes[0].labels[key]", index(nodesV.Index(cty.NumberIntVal(0)).GetAttr("labels"), n(labelKey)), cty.StringVal(n(labelVal))},
		}
		for _, c := range checks {
			if !sameValue(c.got, c.want) {
				t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
			}
		}
		if nodePort == 0 {
			if !service.GetAttr("ports").Index(cty.NumberIntVal(0)).GetAttr("node_port").IsNull() {
				t.Error("unset node_port is not null")
			}
		}
	})
}

func index(m cty.Value, key string) cty.Value {
	if m.IsNull() || !m.Type().IsObjectType() && !m.Type().IsMapType() {
		return cty.NilVal
	}
	v, ok := m.AsValueMap()[key]
	if !ok {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	return v
}

// FuzzRenderRoutes does the same for the routes workspace: route names and
// node names are map keys and values.
func FuzzRenderRoutes(f *testing.F) {
	f.Add("node-a", "10.244.1.0/24", "10.250.0.2")
	f.Add("${x}%{y}", "fd00::/64", "\"}\n")
	set := fullSet(f)
	cfg := testConfig(f, baseConfig)
	f.Fuzz(func(t *testing.T, nodeName, cidr, addr string) {
		if !utf8.ValidString(nodeName) || !utf8.ValidString(cidr) || !utf8.ValidString(addr) {
			t.Skip("valid UTF-8 only")
		}
		routes := []Route{{Name: RouteName(nodeName, cidr), DestinationCIDR: cidr, TargetNode: nodeName,
			TargetNodeAddresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: addr}}}}
		ws, err := set.renderRoutes(cfg, routes)
		if err != nil {
			if strings.Contains(err.Error(), "is not a CIDR") || strings.Contains(err.Error(), "no target node") {
				return
			}
			t.Fatal(err)
		}
		checkTfvars(t, ws.Files[TfvarsFile], ws.inputs)
		f, _ := hclsyntax.ParseConfig(ws.Files[TfvarsFile], "x", hcl.InitialPos)
		rv, _ := f.Body.(*hclsyntax.Body).Attributes["routes"].Expr.Value(nil)
		r := index(rv, norm.NFC.String(RouteName(nodeName, cidr)))
		if r.IsNull() || !sameValue(r.GetAttr("target_node"), cty.StringVal(norm.NFC.String(nodeName))) {
			t.Fatalf("route does not round-trip: %#v", rv)
		}
	})
}
