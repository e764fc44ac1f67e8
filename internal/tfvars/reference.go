package tfvars

import (
	"regexp"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// The reference implementation: how tfccm wrote tfvars before the Printer
// (an hclwrite token tree, formatted by File.Bytes). The Printer must
// produce exactly its bytes; the equivalence tests of this package and of
// templates compare the two.

// bareKeyRE and keywords are the documented rule for bare keys (see
// bareKey).
var (
	bareKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	keywords  = map[string]bool{"true": true, "false": true, "null": true, "for": true, "in": true, "if": true, "else": true, "endif": true, "endfor": true}
)

// tokensFor renders a known value as HCL literal tokens with hclwrite.
func tokensFor(v cty.Value) hclwrite.Tokens {
	t := v.Type()
	switch {
	case v.IsNull() || t.IsPrimitiveType():
		return hclwrite.TokensForValue(v)
	case t.IsListType() || t.IsSetType() || t.IsTupleType():
		toks := hclwrite.Tokens{{Type: hclsyntax.TokenOBrack, Bytes: []byte("[")}}
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			if i > 0 {
				toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenComma, Bytes: []byte(",")})
			}
			_, ev := it.Element()
			toks = append(toks, tokensFor(ev)...)
		}
		return append(toks, &hclwrite.Token{Type: hclsyntax.TokenCBrack, Bytes: []byte("]")})
	case t.IsMapType() || t.IsObjectType():
		toks := hclwrite.Tokens{{Type: hclsyntax.TokenOBrace, Bytes: []byte("{")}}
		if v.LengthInt() > 0 {
			toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenNewline, Bytes: []byte("\n")})
		}
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			ks := k.AsString()
			if bareKeyRE.MatchString(ks) && !keywords[ks] {
				toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenIdent, Bytes: []byte(ks)})
			} else {
				toks = append(toks, hclwrite.TokensForValue(cty.StringVal(ks))...)
			}
			toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenEqual, Bytes: []byte("=")})
			toks = append(toks, tokensFor(ev)...)
			toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenNewline, Bytes: []byte("\n")})
		}
		return append(toks, &hclwrite.Token{Type: hclsyntax.TokenCBrace, Bytes: []byte("}")})
	}
	panic("tokensFor: unsupported value of type " + t.FriendlyName())
}

// hclwriteTfvars is the reference file: header comment, then the
// attributes in names order.

func Reference(header string, names []string, vals map[string]cty.Value) []byte {
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	body.AppendUnstructuredTokens(hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte(header)}})
	for _, n := range names {
		body.SetAttributeRaw(n, tokensFor(vals[n]))
	}
	return f.Bytes()
}
