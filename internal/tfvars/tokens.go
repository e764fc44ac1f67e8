package tfvars

import (
	"unicode"
	"unicode/utf8"
)

// The rules below decide how values are spelled in the generated tfvars.
// They are what the injection fuzzers (fuzz_test.go) prove safe: every
// string is quoted and escaped, so no Service field, label or annotation
// can become HCL syntax. printer.go applies them; printer_test.go proves
// the printer byte-identical to hclwrite given the same rules.

// bareKey reports whether an object or map key is written without quotes:
// only keys matching ^[A-Za-z_][A-Za-z0-9_-]*$ that are not keywords.
// hclwrite would also leave some non-ASCII identifiers bare (e.g. ones
// starting with U+FEFF) that the HCL lexer then rejects; quoting everything
// else is always safe, because quoted text is escaped by appendQuotedLit.
func bareKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case i > 0 && (c >= '0' && c <= '9' || c == '-'):
		default:
			return false
		}
	}
	switch s { // keywords are never bare
	case "true", "false", "null", "for", "in", "if", "else", "endif", "endfor":
		return false
	}
	return true
}

// appendQuotedLit appends s escaped as the body of an HCL quoted string,
// exactly as hclwrite escapes strings (TokensForValue): newline, carriage
// return, tab, quote and backslash become backslash escapes; the template
// introducers ${ and %{ are doubled ($${, %%{) so they stay literal; every
// other non-printing character becomes \uXXXX or \UXXXXXXXX. Invalid UTF-8
// bytes become U+FFFD.
func appendQuotedLit(dst []byte, s string) []byte {
	start := 0 // s[start:i] is pending plain text
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError && unicode.IsPrint(r) {
				i += size
				continue // copied with the pending run
			}
			dst = append(dst, s[start:i]...)
			if r == utf8.RuneError {
				dst = utf8.AppendRune(dst, r) // printable: invalid bytes and U+FFFD alike
			} else {
				dst = appendRuneEscape(dst, r)
			}
			i += size
			start = i
			continue
		}
		var esc byte
		switch c {
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		case '\t':
			esc = 't'
		case '"', '\\':
			esc = c
		case '$', '%':
			if i+1 < len(s) && s[i+1] == '{' {
				dst = append(dst, s[start:i+1]...)
				dst = append(dst, c)
				i++
				start = i
				continue
			}
			i++
			continue
		default:
			if c >= 0x20 && c < 0x7f {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = appendRuneEscape(dst, rune(c))
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = append(dst, '\\', esc)
		i++
		start = i
	}
	return append(dst, s[start:]...)
}

// appendRuneEscape appends \uXXXX (or \UXXXXXXXX beyond the BMP) in lower
// case hex, as hclwrite does.
func appendRuneEscape(dst []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	digits := 4
	if r >= 0x10000 {
		digits = 8
		dst = append(dst, '\\', 'U')
	} else {
		dst = append(dst, '\\', 'u')
	}
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		dst = append(dst, hex[(r>>uint(shift))&0xf])
	}
	return dst
}
