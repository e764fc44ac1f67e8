// Client-address hashing of routed VIPs: per-next-hop routing tables and the
// nftables marks.

package router

import (
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Client hashing. The kernel's multipath hash policy is one setting per
// network namespace (the local cloud uses flow hashing, policy 1), so a VIP
// hashed by client gets its own path: an nftables rule in table NftTable
// marks each packet to the VIP with jhash(client address) mod n, mapped to
// one of its n healthy next hops; a policy rule (priority RulePref) per next
// hop sends packets with that hop's mark to a table holding only a default
// route via the hop. A hop's mark and table number are its IPv4 address as
// a 32-bit number, so they need no allocation and survive restarts. The
// mark of a connection's first packet is kept in its conntrack entry: its
// later packets keep their next hop while it stays healthy, also when
// other hops come and go. The main table's ECMP route stays: it serves the
// VIP if nftables is missing. Switching a VIP between client and flow
// hashing moves connections that span the switch (they may be reset).

// NftTable is the nftables table (family ip) the router owns.
const NftTable = "lbhost_router"

// RulePref is the priority of the policy rules the router owns.
const RulePref = "7700"

// hopID is the mark and routing table number of a next hop.
func hopID(hop string) (uint32, error) {
	a, err := netip.ParseAddr(hop)
	if err != nil || !a.Is4() {
		return 0, fmt.Errorf("next hop %q is not an IPv4 address", hop)
	}
	b := a.As4()
	id := binary.BigEndian.Uint32(b[:])
	// 0 and 253-255 are the kernel's unspec, default, main and local tables.
	if id == 0 || id >= 253 && id <= 255 {
		return 0, fmt.Errorf("next hop %q cannot be a routing table number", hop)
	}
	return id, nil
}

// hopOfTable is the next hop whose table number is id.
func hopOfTable(id uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], id)
	return netip.AddrFrom4(b).String()
}

// HopRouteArgs is the route of a next hop's own table.
func HopRouteArgs(hop string) []string {
	id, _ := hopID(hop)
	return []string{"ip", "-4", "route", "replace", "default", "via", hop, "table", strconv.FormatUint(uint64(id), 10), "proto", Proto}
}

// HopRuleArgs adds ("add") or deletes ("del") a next hop's policy rule.
func HopRuleArgs(op, hop string) []string {
	id, _ := hopID(hop)
	return []string{"ip", "-4", "rule", op, "pref", RulePref, "fwmark", fmt.Sprintf("0x%x", id), "table", strconv.FormatUint(uint64(id), 10)}
}

// HopFlushArgs removes a next hop's table.
func HopFlushArgs(hop string) []string {
	id, _ := hopID(hop)
	return []string{"ip", "-4", "route", "flush", "table", strconv.FormatUint(uint64(id), 10)}
}

// Ruleset is the nftables script that replaces table NftTable with one
// rule per client-hashed VIP (address -> its healthy next hops; a VIP with
// one hop needs no rule). With no such VIP it only removes the table.
// The script is deterministic: equal input, equal text.
func Ruleset(vips map[string][]string) string {
	var b strings.Builder
	// Declaring the table first makes the delete valid when it is absent.
	fmt.Fprintf(&b, "table ip %s\ndelete table ip %s\n", NftTable, NftTable)
	var rules []string
	for _, addr := range slices.Sorted(maps.Keys(vips)) {
		hops := slices.Sorted(slices.Values(vips[addr]))
		if len(hops) < 2 {
			continue
		}
		entries := make([]string, len(hops))
		for i, h := range hops {
			id, _ := hopID(h)
			entries[i] = fmt.Sprintf("%d : 0x%x", i, id)
		}
		// A new connection's mark is kept in its conntrack entry, so its
		// later packets stay on its next hop when the healthy set changes;
		// connections older than the rule (mark 0) keep the main table's
		// ECMP path they started on.
		rules = append(rules,
			fmt.Sprintf("\t\tip daddr %s ct state new meta mark set jhash ip saddr mod %d seed 0x0 map { %s } ct mark set meta mark",
				addr, len(hops), strings.Join(entries, ", ")),
			fmt.Sprintf("\t\tip daddr %s ct state != new meta mark set ct mark", addr))
	}
	if len(rules) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "table ip %s {\n\tchain prerouting {\n\t\ttype filter hook prerouting priority mangle; policy accept;\n", NftTable)
	for _, r := range rules {
		b.WriteString(r + "\n")
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}
