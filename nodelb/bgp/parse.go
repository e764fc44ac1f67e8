// Reading a daemon's running configuration: the blocks tfccm owns.

package bgp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tfccm/tfccm/lbhost/frr"
)

// line is one configuration line with its context.
type line struct {
	indent  int
	context []string
	text    string
	body    []string // set for a block's header: its children's lines
}

// parse splits running-config text into lines with their contexts (the
// headers above them, by indentation).
func parse(text string) []*line {
	raw := strings.Split(text, "\n")
	var out []*line
	type frame struct {
		indent int
		l      *line
	}
	var stack []frame
	for i, r := range raw {
		t := strings.TrimSpace(r)
		if t == "" || t == "!" || strings.HasPrefix(t, "exit") || t == "end" {
			continue
		}
		ind := len(r) - len(strings.TrimLeft(r, " "))
		for len(stack) > 0 && stack[len(stack)-1].indent >= ind {
			stack = stack[:len(stack)-1]
		}
		var ctx []string
		for _, f := range stack {
			ctx = append(ctx, f.l.text)
			f.l.body = append(f.l.body, t)
		}
		l := &line{indent: ind, context: ctx, text: t}
		out = append(out, l)
		if next := nextLine(raw[i+1:]); next != "" && len(next)-len(strings.TrimLeft(next, " ")) > ind {
			stack = append(stack, frame{ind, l})
		}
	}
	return out
}

func nextLine(rest []string) string {
	for _, r := range rest {
		if t := strings.TrimSpace(r); t != "" && t != "!" {
			return r
		}
	}
	return ""
}

// running is what a daemon's running configuration holds of tfccm's,
// and the ASN of its default BGP instance (0: none).
type running struct {
	owned []frr.Block
	asn   uint32
	// peers are the neighbours tfccm owns (by their description).
	peers map[string]bool
	// noDefaultIPv4: the instance runs with `no bgp default ipv4-unicast`.
	noDefaultIPv4 bool
}

// owned finds tfccm's objects in daemon's running configuration text.
func owned(daemon, text string) (running, error) {
	ls := parse(text)
	r := running{peers: map[string]bool{}}
	for _, l := range ls {
		if len(l.context) == 0 && strings.HasPrefix(l.text, "router bgp ") {
			f := strings.Fields(l.text)
			if len(f) == 3 { // not "router bgp N vrf X"
				n, err := strconv.ParseUint(f[2], 10, 32)
				if err != nil {
					return r, fmt.Errorf("%s: %q: %w", daemon, l.text, err)
				}
				r.asn = uint32(n)
			}
		}
		if len(l.context) == 1 && l.context[0] == frr.BGPContext(r.asn) && l.text == "no bgp default ipv4-unicast" {
			r.noDefaultIPv4 = true
		}
		if len(l.context) == 1 && l.context[0] == frr.BGPContext(r.asn) && strings.HasPrefix(l.text, "neighbor ") {
			f := strings.Fields(l.text)
			if len(f) == 4 && f[2] == "description" && strings.HasPrefix(f[3], frr.RouterPrefix) {
				r.peers[f[1]] = true
			}
		}
	}
	bgp := frr.BGPContext(r.asn)
	for _, l := range ls {
		b := frr.Block{Daemon: daemon, Context: l.context, Text: l.text}
		switch {
		case len(l.context) == 0 && (strings.HasPrefix(l.text, "ip prefix-list "+frr.RouterPrefix) || strings.HasPrefix(l.text, "ipv6 prefix-list "+frr.RouterPrefix)):
		case len(l.context) == 0 && strings.HasPrefix(l.text, "route-map "+frr.RouterPrefix):
			b.Body = l.body
		case len(l.context) == 1 && l.context[0] == "bfd" && strings.HasPrefix(l.text, "profile "+frr.RouterPrefix):
			b.Body = l.body
		case r.asn != 0 && len(l.context) >= 1 && l.context[0] == bgp && r.peers[neighborOf(l.text)]:
		case daemon == "staticd" && len(l.context) == 0 && (strings.HasPrefix(l.text, "ip route ") || strings.HasPrefix(l.text, "ipv6 route ")) && strings.HasSuffix(l.text, fmt.Sprintf(" tag %d", frr.StaticTag)):
		case r.asn != 0 && len(l.context) == 2 && l.context[0] == bgp && strings.HasPrefix(l.text, "network ") && strings.HasSuffix(l.text, " route-map "+frr.OriginateMap):
		default:
			continue
		}
		r.owned = append(r.owned, b)
	}
	return r, nil
}

// neighborOf is the address of a `neighbor <address> ...` or `no neighbor
// <address> ...` line ("" for another line).
func neighborOf(text string) string {
	f := strings.Fields(strings.TrimPrefix(text, "no "))
	if len(f) < 2 || f[0] != "neighbor" {
		return ""
	}
	return f[1]
}
