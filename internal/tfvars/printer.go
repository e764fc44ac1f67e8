package tfvars

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// Printer writes the generated tfvars file: a header comment, then
// one attribute per input, each a literal value. Its output is exactly the
// bytes hclwrite's File.Bytes produces for the same comment and attributes
// (tokens as tokensFor in reference.go builds them), formatting
// included: it emits the same token sequence and applies hclwrite's
// formatting rules (indentation by bracket nesting, spacing between
// tokens, `=` aligned across consecutive single-line attributes) line by
// line as the tokens stream out, instead of building a token tree and
// formatting it afterwards. printer_test.go and templates' render tests prove the equivalence.
//
// Alignment counts columns as hclwrite does, in grapheme clusters; keys
// that are not plain ASCII are measured with hclwrite itself.
type Printer struct {
	out []byte

	// The line being built: its tokens and their text.
	toks []ptok
	text []byte

	// indents is hclwrite's indent stack: the bracket count each open
	// indentation level holds.
	indents []int

	// chain holds consecutive lines with an aligned `=` (hclwrite's assign
	// chain) until a line without one ends it: each line's text, where its
	// `=` goes, and how many columns precede it.
	chain     []chainLine
	chainText []byte
	chainMax  int

	keys []string // scratch stack of sorted attribute names
	err  error    // the first value that cannot be written
}

// ErrNotKnown: a value holds unknowns (only known values are inputs).
var ErrNotKnown = errors.New("value is not fully known")

type tokKind uint8

const (
	tokNewline tokKind = iota
	tokComment
	tokIdent
	tokNumber
	tokOQuote
	tokQuotedLit
	tokCQuote
	tokOBrack
	tokCBrack
	tokOBrace
	tokCBrace
	tokComma
	tokEqual
)

// ptok is a token of the current line; its text is text[start:end].
type ptok struct {
	kind       tokKind
	start, end int32
}

type chainLine struct {
	leadEnd, end int // chainText offsets: lead is [prev end, leadEnd), assign [leadEnd, end)
	cols         int // columns of the lead, indentation included
}

// printers recycles printers and their buffers: renders of large
// clusters would otherwise grow a fresh output buffer every time.
var printers = sync.Pool{New: func() any { return &Printer{} }}

// maxPooledBuffer bounds the buffers a pooled printer keeps.
const maxPooledBuffer = 8 << 20

// NewPrinter starts a file with the comment line header (which must
// end in a newline).
func NewPrinter(header string) *Printer {
	p := printers.Get().(*Printer)
	p.add(tokComment, header)
	return p
}

// Attribute writes `name = v`. v must be known, unmarked and made of
// primitives, lists, sets, tuples, maps and objects.
// On error the printer's output is unusable.
func (p *Printer) Attribute(name string, v cty.Value) error {
	p.add(tokIdent, name)
	p.add(tokEqual, "=")
	p.value(v)
	p.add(tokNewline, "\n")
	return p.err
}

// Bytes finishes the file and returns its content. The printer must not
// be used afterwards.
func (p *Printer) Bytes() []byte {
	p.endLine()
	p.closeChain()
	out := bytes.Clone(p.out)
	if cap(p.out) <= maxPooledBuffer && cap(p.chainText) <= maxPooledBuffer {
		*p = Printer{out: p.out[:0], toks: p.toks[:0], text: p.text[:0], indents: p.indents[:0],
			chain: p.chain[:0], chainText: p.chainText[:0], keys: p.keys[:0]}
		printers.Put(p)
	}
	return out
}

func (p *Printer) value(v cty.Value) {
	switch {
	case p.err != nil:
		return
	case v.IsMarked():
		p.err = fmt.Errorf("value is marked")
		return
	case !v.IsKnown():
		p.err = ErrNotKnown
		return
	}
	if v.IsNull() {
		p.add(tokIdent, "null")
		return
	}
	t := v.Type()
	switch {
	case t == cty.String:
		p.str(v.AsString())
	case t == cty.Number:
		p.number(v.AsBigFloat())
	case t == cty.Bool:
		if v.True() {
			p.add(tokIdent, "true")
		} else {
			p.add(tokIdent, "false")
		}
	case t.IsListType() || t.IsSetType() || t.IsTupleType():
		p.add(tokOBrack, "[")
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			if i > 0 {
				p.add(tokComma, ",")
			}
			_, ev := it.Element()
			p.value(ev)
		}
		p.add(tokCBrack, "]")
	case t.IsObjectType():
		p.add(tokOBrace, "{")
		base := len(p.keys)
		for k := range t.AttributeTypes() {
			p.keys = append(p.keys, k)
		}
		names := p.keys[base:]
		slices.Sort(names)
		if len(names) > 0 {
			p.add(tokNewline, "\n")
		}
		for i := range names {
			// Index p.keys again: it may grow (and move) while writing
			// values. Keys are spelled as cty's element iterator does.
			k := p.keys[base+i]
			if !isASCII(k) {
				p.key(cty.NormalizeString(k))
			} else {
				p.key(k) // ASCII is NFC already
			}
			p.value(v.GetAttr(k))
			p.add(tokNewline, "\n")
		}
		p.keys = p.keys[:base]
		p.add(tokCBrace, "}")
	case t.IsMapType():
		p.add(tokOBrace, "{")
		if v.LengthInt() > 0 {
			p.add(tokNewline, "\n")
		}
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			p.key(k.AsString())
			p.value(ev)
			p.add(tokNewline, "\n")
		}
		p.add(tokCBrace, "}")
	default:
		p.err = fmt.Errorf("a value of type %s cannot be written as HCL", t.FriendlyName())
	}
}

// key writes an object key and its `=`.
func (p *Printer) key(k string) {
	if bareKey(k) {
		p.add(tokIdent, k)
	} else {
		p.str(k)
	}
	p.add(tokEqual, "=")
}

func (p *Printer) str(s string) {
	p.add(tokOQuote, `"`)
	start := len(p.text)
	p.text = appendQuotedLit(p.text, s)
	if len(p.text) > start {
		p.toks = append(p.toks, ptok{tokQuotedLit, int32(start), int32(len(p.text))})
	}
	p.add(tokCQuote, `"`)
}

// number spells n as hclwrite does: n.Text('f', -1); integers that fit
// int64 take a shortcut with the same result.
func (p *Printer) number(n *big.Float) {
	start := len(p.text)
	if i, acc := n.Int64(); acc == big.Exact && !(i == 0 && n.Signbit()) {
		p.text = strconv.AppendInt(p.text, i, 10)
	} else {
		p.text = n.Append(p.text, 'f', -1)
	}
	p.toks = append(p.toks, ptok{tokNumber, int32(start), int32(len(p.text))})
}

func (p *Printer) add(kind tokKind, text string) {
	start := len(p.text)
	p.text = append(p.text, text...)
	p.toks = append(p.toks, ptok{kind, int32(start), int32(len(p.text))})
	if kind == tokNewline || kind == tokComment && text != "" && text[len(text)-1] == '\n' {
		p.endLine()
	}
}

func bracketChange(k tokKind) int {
	switch k {
	case tokOBrace, tokOBrack:
		return 1
	case tokCBrace, tokCBrack:
		return -1
	}
	return 0
}

// endLine formats and writes (or, inside an assign chain, holds) the
// current line, as hclwrite's format does line by line.
func (p *Printer) endLine() {
	toks := p.toks
	if len(toks) == 0 {
		return
	}
	p.formatLine(toks)
	p.toks = p.toks[:0]
	p.text = p.text[:0]
}

func (p *Printer) formatLine(toks []ptok) {
	if toks[0].kind == tokNewline { // an empty line: no indentation, no cells
		p.closeChain()
		p.out = append(p.out, '\n')
		return
	}
	// The assign cell starts at the line's first `=` (not its first token)
	// when the rest of the line is bracket-balanced.
	net, eq, netBeforeEq := 0, -1, 0
	for i, t := range toks {
		if eq < 0 && i > 0 && t.kind == tokEqual {
			eq, netBeforeEq = i, net
		}
		net += bracketChange(t.kind)
	}
	split := -1
	if eq > 0 && net-netBeforeEq == 0 {
		split = eq
	}
	// Indentation: two spaces per open level of the indent stack.
	indent := 2 * len(p.indents)
	switch {
	case net > 0:
		p.indents = append(p.indents, net)
	case net < 0:
		for closed := -net; closed > 0 && len(p.indents) > 0; {
			top := &p.indents[len(p.indents)-1]
			switch {
			case closed > *top:
				closed -= *top
				p.indents = p.indents[:len(p.indents)-1]
			case closed < *top:
				*top -= closed
				closed = 0
			default:
				p.indents = p.indents[:len(p.indents)-1]
				closed = 0
			}
		}
		indent = 2 * len(p.indents)
	}
	if split < 0 {
		p.closeChain()
		p.out = appendSpaces(p.out, indent)
		p.out, _ = p.appendCell(p.out, toks, false)
		return
	}
	p.chainText = appendSpaces(p.chainText, indent)
	var cols int
	p.chainText, cols = p.appendCell(p.chainText, toks[:split], true)
	cols += indent
	leadEnd := len(p.chainText)
	p.chainText, _ = p.appendCell(p.chainText, toks[split:], false)
	p.chain = append(p.chain, chainLine{leadEnd: leadEnd, end: len(p.chainText), cols: cols})
	if cols > p.chainMax {
		p.chainMax = cols
	}
}

// closeChain writes the held lines with their `=` aligned one column past
// the widest lead.
func (p *Printer) closeChain() {
	prev := 0
	for _, l := range p.chain {
		p.out = append(p.out, p.chainText[prev:l.leadEnd]...)
		p.out = appendSpaces(p.out, p.chainMax-l.cols+1)
		p.out = append(p.out, p.chainText[l.leadEnd:l.end]...)
		prev = l.end
	}
	p.chain = p.chain[:0]
	p.chainText = p.chainText[:0]
	p.chainMax = 0
}

// appendCell appends a cell's tokens with hclwrite's spacing between them
// (the first token's leading space is the caller's) and, if count is set,
// returns the columns they take.
func (p *Printer) appendCell(dst []byte, cell []ptok, count bool) ([]byte, int) {
	cols := 0
	for i, t := range cell {
		if i > 0 {
			var before *ptok
			if i > 1 {
				before = &cell[i-2]
			}
			if p.spaceAfter(&cell[i-1], before, &t) {
				dst = append(dst, ' ')
				cols++
			}
		}
		b := p.text[t.start:t.end]
		dst = append(dst, b...)
		if count {
			cols += columns(b)
		}
	}
	return dst, cols
}

// spaceAfter is hclwrite's spacing rule (spaceAfterToken) for the token
// kinds the printer emits; before is nil at the start of a cell.
func (p *Printer) spaceAfter(subject, before, after *ptok) bool {
	switch {
	case after.kind == tokNewline:
		return false
	case after.kind == tokComma:
		return false
	case subject.kind == tokComma:
		return true
	case subject.kind == tokQuotedLit || subject.kind == tokOQuote || after.kind == tokQuotedLit || after.kind == tokCQuote:
		return false
	case subject.kind == tokIdent && before != nil && before.kind == tokIdent && string(p.text[subject.start:subject.end]) == "in":
		return true
	case after.kind == tokOBrack && (subject.kind == tokIdent || subject.kind == tokNumber || bracketChange(subject.kind) < 0):
		return false
	case subject.kind == tokOBrace || after.kind == tokCBrace:
		return !(subject.kind == tokOBrace && after.kind == tokCBrace)
	case bracketChange(subject.kind) > 0:
		return false
	case bracketChange(after.kind) < 0:
		return false
	}
	return true
}

// columns is the width hclwrite gives text when aligning: its grapheme
// clusters. Plain ASCII without CR has one per byte; anything else is
// measured by hclwrite itself.
func columns(b []byte) int {
	for _, c := range b {
		if c >= 0x80 || c == '\r' {
			return hclwrite.Tokens{{Bytes: b}}.Columns()
		}
	}
	return len(b)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

const spaces = "                                                                "

func appendSpaces(dst []byte, n int) []byte {
	for n > len(spaces) {
		dst = append(dst, spaces...)
		n -= len(spaces)
	}
	if n > 0 {
		dst = append(dst, spaces[:n]...)
	}
	return dst
}
