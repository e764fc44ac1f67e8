// Handmade: a vrrp_instance a person wrote into keepalived's main
// configuration, found by name with a small tokenizer and block parser
// (keepalived's own grammar: words, quoted strings, '{' '}' blocks, '#' and
// '!' comments), so tfccm can adopt it. Errors name the file, the instance
// and line numbers, never the file's text.

package keepalived

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// reName is the shape of an instance name tfccm adopts: it reaches error
// messages and tfccm's own fragment, so nothing else.
var reName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ErrNoInstance: the configuration has no instance of the name.
var ErrNoInstance = errors.New("not found (only the file itself is searched, not the files it includes)")

// ValidName reports whether s can name an adopted instance.
func ValidName(s string) bool { return reName.MatchString(s) }

// Handmade is a hand-made VRRP instance as its configuration has it, and
// where its block is in the file (Start..End, whole lines: removing the
// bytes removes the block).
type Handmade struct {
	Instance   // Name set; Owner empty
	Start, End int
	// Line is where the block starts (1-based).
	Line int
}

// token is one word, '{' or '}' of a configuration.
type token struct {
	text   string
	line   int
	start  int // byte offset
	quoted bool
}

// tokenize splits data into tokens, dropping comments.
func tokenize(data []byte) ([]token, error) {
	var out []token
	line := 1
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#' || c == '!':
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case c == '{' || c == '}':
			out = append(out, token{text: string(c), line: line, start: i})
			i++
		case c == '"':
			j := i + 1
			for j < len(data) && data[j] != '"' && data[j] != '\n' {
				j++
			}
			if j >= len(data) || data[j] != '"' {
				return nil, fmt.Errorf("line %d: a quoted string is not closed on its line", line)
			}
			out = append(out, token{text: string(data[i+1 : j]), line: line, start: i, quoted: true})
			i = j + 1
		default:
			j := i
			for j < len(data) && !strings.ContainsRune(" \t\r\n{}#!\"", rune(data[j])) {
				j++
			}
			out = append(out, token{text: string(data[i:j]), line: line, start: i})
			i = j
		}
	}
	return out, nil
}

// stmt is one statement: its words, and its block when it opens one.
type stmt struct {
	words []token
	block []stmt
	// open: the statement opens a block; end is the offset after its '}'.
	open bool
	end  int
}

// parseBlock reads statements until a '}' (nested) or the end (top).
func parseBlock(toks []token, i int, nested bool, openLine int) ([]stmt, int, error) {
	var out []stmt
	var cur stmt
	flush := func() {
		if len(cur.words) > 0 {
			out = append(out, cur)
		}
		cur = stmt{}
	}
	for i < len(toks) {
		t := toks[i]
		switch {
		case t.text == "{" && !t.quoted:
			block, next, err := parseBlock(toks, i+1, true, t.line)
			if err != nil {
				return nil, 0, err
			}
			cur.block, cur.open, cur.end = block, true, toks[next-1].start+1
			if len(cur.words) == 0 {
				cur.words = []token{{text: "", line: t.line, start: t.start}}
			}
			flush()
			i = next
			continue
		case t.text == "}" && !t.quoted:
			if !nested {
				return nil, 0, fmt.Errorf("line %d: a '}' closes no block", t.line)
			}
			flush()
			return out, i + 1, nil
		}
		// A statement ends at its line's end (keepalived's grammar is
		// line-based), or at a block.
		if len(cur.words) > 0 && cur.words[len(cur.words)-1].line != t.line {
			flush()
		}
		cur.words = append(cur.words, t)
		i++
	}
	if nested {
		return nil, 0, fmt.Errorf("line %d: a '{' is never closed", openLine)
	}
	flush()
	return out, i, nil
}

// FindHandmade finds the top-level `vrrp_instance <name> { ... }` in data
// (keepalived's main configuration, file) and reads it. Instances in
// included files are not searched. Every error names file and name and
// at most line numbers of the file.
func FindHandmade(data []byte, file, name string) (Handmade, error) {
	if !ValidName(name) {
		return Handmade{}, fmt.Errorf("keepalived instance name: must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit")
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("keepalived configuration %s: vrrp_instance %s: %s", file, name, fmt.Sprintf(format, args...))
	}
	toks, err := tokenize(data)
	if err != nil {
		return Handmade{}, fmt.Errorf("keepalived configuration %s cannot be read (%v) while looking for vrrp_instance %s", file, err, name)
	}
	top, _, err := parseBlock(toks, 0, false, 0)
	if err != nil {
		return Handmade{}, fmt.Errorf("keepalived configuration %s cannot be read (%v) while looking for vrrp_instance %s", file, err, name)
	}
	var found []stmt
	for _, s := range top {
		if len(s.words) == 2 && s.words[0].text == "vrrp_instance" && s.words[1].text == name && s.open {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return Handmade{}, fmt.Errorf("keepalived configuration %s: vrrp_instance %s: %w", file, name, ErrNoInstance)
	case 1:
	default:
		return Handmade{}, fail("defined %d times (lines %d and %d)", len(found), found[0].words[0].line, found[1].words[0].line)
	}
	s := found[0]
	hm := Handmade{Line: s.words[0].line, Start: lineStart(data, s.words[0].start), End: lineEnd(data, s.end)}
	if strings.TrimSpace(string(data[hm.Start:s.words[0].start])) != "" || strings.TrimSpace(string(data[s.end:hm.End])) != "" {
		// Something else shares the block's first or last line.
		return Handmade{}, fail("line %d: the block shares a line with other settings; put it on lines of its own", hm.Line)
	}
	hm.Name = name
	if err := hm.read(s.block); err != nil {
		return Handmade{}, fail("%v", err)
	}
	return hm, nil
}

// read fills hm from the instance's block: only what tfccm's own
// instance carries; anything else is refused (it would be lost).
func (hm *Handmade) read(block []stmt) error {
	hm.Priority, hm.AdvertInt = 100, 1 // keepalived's defaults
	var vips []string
	seen := map[string]int{}
	for _, s := range block {
		key, line := s.words[0].text, s.words[0].line
		args := s.words[1:]
		if prev, dup := seen[key]; dup && key != "" {
			return fmt.Errorf("line %d: %s is set twice (first at line %d)", line, key, prev)
		}
		seen[key] = line
		one := func() (string, error) {
			if len(args) != 1 || s.open {
				return "", fmt.Errorf("line %d: %s takes one value", line, key)
			}
			return args[0].text, nil
		}
		num := func(lo, hi int) (int, error) {
			v, err := one()
			if err != nil {
				return 0, err
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < lo || n > hi {
				return 0, fmt.Errorf("line %d: %s must be a whole number from %d to %d", line, key, lo, hi)
			}
			return n, nil
		}
		var err error
		switch key {
		case "state":
			var v string
			if v, err = one(); err == nil && v != "MASTER" && v != "BACKUP" {
				err = fmt.Errorf("line %d: state must be MASTER or BACKUP", line)
			}
		case "interface":
			hm.Interface, err = one()
		case "virtual_router_id":
			hm.VirtualRouterID, err = num(1, 255)
		case "priority":
			hm.Priority, err = num(1, 254)
		case "advert_int":
			hm.AdvertInt, err = num(1, 255)
		case "nopreempt":
			if len(args) != 0 || s.open {
				err = fmt.Errorf("line %d: nopreempt takes no value", line)
			}
			hm.NoPreempt = true
		case "unicast_src_ip":
			hm.SourceAddress, err = one()
		case "unicast_peer":
			hm.Peers, err = addressList(s, line, key)
		case "virtual_ipaddress":
			vips, err = vipList(s, line)
		default:
			// Not quoted: it is the file's text.
			err = fmt.Errorf("line %d: a setting tfccm's instance does not carry (it keeps the VIP, interface, virtual_router_id, priority, advert_int, nopreempt, unicast_src_ip and unicast_peer only); move it out of the instance, or keep adopting by hand", line)
		}
		if err != nil {
			return err
		}
	}
	switch {
	case hm.Interface == "":
		return fmt.Errorf("interface is not set")
	case !ValidInterface(hm.Interface):
		return fmt.Errorf("line %d: interface is not an interface name", seen["interface"])
	case hm.VirtualRouterID == 0:
		return fmt.Errorf("virtual_router_id is not set")
	case len(vips) != 1:
		return fmt.Errorf("line %d: virtual_ipaddress holds %d addresses; tfccm adopts an instance with exactly one", seen["virtual_ipaddress"], len(vips))
	}
	addr, dev, _ := strings.Cut(vips[0], " ")
	addr, bits, _ := strings.Cut(addr, "/")
	hm.Address, hm.AddressInterface = addr, dev
	if n, err := strconv.Atoi(bits); err == nil && n != netip.MustParseAddr(addr).BitLen() {
		hm.AddressBits = n
	}
	if dev == "" {
		hm.AddressInterface = hm.Interface
	}
	if hm.SourceAddress != "" && !ip(hm.SourceAddress) {
		return fmt.Errorf("line %d: unicast_src_ip is not an IP address", seen["unicast_src_ip"])
	}
	return nil
}

// addressList reads a block of one address per line (unicast_peer).
func addressList(s stmt, line int, key string) ([]string, error) {
	if !s.open || len(s.words) != 1 {
		return nil, fmt.Errorf("line %d: %s must be a block of addresses", line, key)
	}
	var out []string
	for _, e := range s.block {
		if e.open || !ip(e.words[0].text) {
			return nil, fmt.Errorf("line %d: %s entries must be IP addresses", e.words[0].line, key)
		}
		out = append(out, e.words[0].text)
	}
	return out, nil
}

// vipList reads virtual_ipaddress: "ADDR[/LEN] [dev IFACE]" per line, as
// "ADDR IFACE" (IFACE "" when not given).
func vipList(s stmt, line int) ([]string, error) {
	if !s.open || len(s.words) != 1 {
		return nil, fmt.Errorf("line %d: virtual_ipaddress must be a block of addresses", line)
	}
	var out []string
	for _, e := range s.block {
		l := e.words[0].line
		a, bits, hasBits := strings.Cut(e.words[0].text, "/")
		addr, err := netip.ParseAddr(a)
		if e.open || err != nil || addr.Zone() != "" || addr.String() != a {
			return nil, fmt.Errorf("line %d: a virtual_ipaddress entry is not an IP address", l)
		}
		if n, err := strconv.Atoi(bits); hasBits && (err != nil || n < 0 || n > addr.BitLen()) {
			return nil, fmt.Errorf("line %d: a virtual_ipaddress entry has an invalid prefix length", l)
		}
		dev := ""
		switch rest := e.words[1:]; {
		case len(rest) == 0:
		case len(rest) == 2 && rest[0].text == "dev" && ValidInterface(rest[1].text):
			dev = rest[1].text
		default:
			return nil, fmt.Errorf("line %d: a virtual_ipaddress entry has options tfccm's instance does not carry (only \"dev IFACE\")", l)
		}
		out = append(out, e.words[0].text+" "+dev)
	}
	return out, nil
}

// ValidInterface reports whether s is an interface name.
func ValidInterface(s string) bool { return reIface.MatchString(s) }

// lineStart is the offset of the start of the line holding offset i.
func lineStart(data []byte, i int) int {
	for i > 0 && data[i-1] != '\n' {
		i--
	}
	return i
}

// lineEnd is the offset after the newline ending the line that holds
// offset i-1 (or the end of data).
func lineEnd(data []byte, i int) int {
	for i < len(data) && data[i] != '\n' {
		i++
	}
	if i < len(data) {
		i++
	}
	return i
}

// Without returns data with hm's block removed.
func (hm Handmade) Without(data []byte) []byte {
	out := append([]byte{}, data[:hm.Start]...)
	return append(out, data[hm.End:]...)
}
