package templates

import (
	"regexp"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// bareKeyRE is the only shape of map key written without quotes. hclwrite
// would also leave some non-ASCII identifiers bare (e.g. ones starting with
// U+FEFF) that the HCL lexer then rejects; quoting everything else is
// always safe, because quoted text goes through hclwrite's escaping.
var bareKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

var keywords = map[string]bool{"true": true, "false": true, "null": true, "for": true, "in": true, "if": true, "else": true, "endif": true, "endfor": true}

// tokensFor renders a known value as HCL literal tokens. Strings (values and
// quoted keys) use hclwrite's escaping, which doubles the template
// introducers `${` and `%{` and escapes quotes, backslashes and
// non-printing characters.
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
