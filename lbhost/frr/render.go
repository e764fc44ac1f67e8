// Rendering the configuration as FRR's integrated configuration file.

package frr

import (
	"fmt"
	"regexp"
	"strings"
)

// Names of the objects Render writes, for the announcer and tests.
const (
	// ExportMap permits the pools' host routes and sets their
	// communities and local preference on the way to a peer: bgpd sends
	// peers only what it permits.
	ExportMap = "tfccm-export"
	// OriginateMap permits the pools' host routes into bgpd (the kernel's
	// routes of the announcer on an LB host, a node's network statements)
	// and sets nothing: a community set when a route is originated would
	// act on this speaker already (no-export keeps the route from every
	// eBGP peer), where the admin means it for the peer.
	OriginateMap = "tfccm-originate"
	// ImportMap refuses every route a peer sends.
	ImportMap = "tfccm-import"
)

// Render returns the FRR configuration file (bgpd and bfdd; zebra needs
// none) of c, or the first field error. Equal configurations render
// equal files.
func Render(c Config) (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("! Written by tfccm's lbhost provider (lbhost/frr): changes are overwritten.\n")
	b.WriteString("frr defaults traditional\nservice integrated-vtysh-config\nlog syslog informational\n!\n")
	renderPrefixLists(&b, c.Pools)
	renderRouteMaps(&b, c.Pools)
	renderBGP(&b, c)
	renderBFD(&b, c.BFDProfiles)
	return b.String(), nil
}

func prefixList(pool string, v6 bool) string {
	if v6 {
		return "tfccm-pool6-" + pool
	}
	return "tfccm-pool-" + pool
}

// renderPrefixLists: per pool and family, its host routes only (a /32
// or /128 inside a prefix).
func renderPrefixLists(b *strings.Builder, pools []Pool) {
	for _, p := range pools {
		for i, pr := range p.Prefixes {
			if pr.Addr().Is4() {
				fmt.Fprintf(b, "ip prefix-list %s seq %d permit %s ge 32\n", prefixList(p.Name, false), 5*(i+1), pr)
			} else {
				fmt.Fprintf(b, "ipv6 prefix-list %s seq %d permit %s ge 128\n", prefixList(p.Name, true), 5*(i+1), pr)
			}
		}
	}
	b.WriteString("!\n")
}

func families(p Pool) (v4, v6 bool) {
	for _, pr := range p.Prefixes {
		if pr.Addr().Is4() {
			v4 = true
		} else {
			v6 = true
		}
	}
	return v4, v6
}

// routeMapEntry is one pool's entry for one family in the export and
// originate route maps: the same sequence number in both, the match in
// both, the sets only in the export map.
type routeMapEntry struct {
	seq   int
	match string   // "match ip address prefix-list ..."
	sets  []string // "set community ...", ...
}

// routeMapEntries are the pools' route map entries, one per pool and
// family, numbered from 10 in steps of 10: one owner for what the LB
// hosts' file (Render) and a node's blocks (Node.Blocks) hold.
func routeMapEntries(pools []Pool) []routeMapEntry {
	var out []routeMapEntry
	seq := 10
	for _, p := range pools {
		v4, v6 := families(p)
		for _, fam := range []struct {
			on    bool
			v6    bool
			match string
		}{{v4, false, "ip"}, {v6, true, "ipv6"}} {
			if !fam.on {
				continue
			}
			out = append(out, routeMapEntry{seq: seq, match: fmt.Sprintf("match %s address prefix-list %s", fam.match, prefixList(p.Name, fam.v6)), sets: setLines(p)})
			seq += 10
		}
	}
	return out
}

// renderRouteMaps: per pool and family an entry of the export map
// (matching its prefix list, setting its communities and local
// preference towards the peers) and of the originate map (the match
// alone); anything else is denied (a route map's implicit deny), and the
// import map denies everything.
func renderRouteMaps(b *strings.Builder, pools []Pool) {
	entries := routeMapEntries(pools)
	for _, e := range entries {
		fmt.Fprintf(b, "route-map %s permit %d\n %s\n", ExportMap, e.seq, e.match)
		for _, l := range e.sets {
			fmt.Fprintf(b, " %s\n", l)
		}
		b.WriteString("exit\n")
		fmt.Fprintf(b, "route-map %s permit %d\n %s\nexit\n", OriginateMap, e.seq, e.match)
	}
	if len(entries) == 0 {
		// No pool: announce nothing (an empty route map would permit nothing too, but say so).
		fmt.Fprintf(b, "route-map %s deny 10\nexit\nroute-map %s deny 10\nexit\n", ExportMap, OriginateMap)
	}
	fmt.Fprintf(b, "route-map %s deny 10\nexit\n!\n", ImportMap)
}

// setLines are the set clauses of pool p's export entry: its standard
// and large communities and its local preference.
func setLines(p Pool) []string {
	var std, large, out []string
	for _, c := range p.Communities {
		if isLarge(c) {
			large = append(large, c)
		} else {
			std = append(std, c)
		}
	}
	if len(std) > 0 {
		out = append(out, "set community "+strings.Join(std, " "))
	}
	if len(large) > 0 {
		out = append(out, "set large-community "+strings.Join(large, " "))
	}
	if p.LocalPref != nil {
		out = append(out, fmt.Sprintf("set local-preference %d", *p.LocalPref))
	}
	return out
}

func renderBGP(b *strings.Builder, c Config) {
	fmt.Fprintf(b, "router bgp %d\n bgp router-id %s\n no bgp default ipv4-unicast\n", c.ASN, c.RouterID)
	for _, p := range c.Peers {
		a := p.Address.String()
		// advertisement-interval 0: a withdrawal (a failed frontend) goes
		// out at once, not after eBGP's 30 s MRAI.
		fmt.Fprintf(b, " neighbor %s remote-as %d\n neighbor %s description %s\n neighbor %s advertisement-interval 0\n", a, p.ASN, a, p.Name, a)
		if p.Port != 0 {
			fmt.Fprintf(b, " neighbor %s port %d\n", a, p.Port)
		}
		if p.Keepalive != 0 {
			fmt.Fprintf(b, " neighbor %s timers %d %d\n", a, int(p.Keepalive.Seconds()), int(p.Hold.Seconds()))
		}
		if p.Password != "" {
			fmt.Fprintf(b, " neighbor %s password %s\n", a, p.Password)
		}
		if p.BFDProfile != "" {
			fmt.Fprintf(b, " neighbor %s bfd profile %s\n", a, p.BFDProfile)
		}
	}
	for _, fam := range []struct {
		name string
		v6   bool
	}{{"ipv4", false}, {"ipv6", true}} {
		fmt.Fprintf(b, " address-family %s unicast\n  redistribute kernel route-map %s\n", fam.name, OriginateMap)
		for _, p := range c.Peers {
			if p.Address.Is6() != fam.v6 {
				continue
			}
			a := p.Address.String()
			fmt.Fprintf(b, "  neighbor %s activate\n  neighbor %s route-map %s in\n  neighbor %s route-map %s out\n", a, a, ImportMap, a, ExportMap)
		}
		b.WriteString(" exit-address-family\n")
	}
	b.WriteString("exit\n!\n")
}

func renderBFD(b *strings.Builder, profiles []BFDProfile) {
	if len(profiles) == 0 {
		return
	}
	b.WriteString("bfd\n")
	for _, p := range profiles {
		fmt.Fprintf(b, " profile %s\n", p.Name)
		if p.ReceiveInterval != 0 {
			fmt.Fprintf(b, "  receive-interval %d\n", p.ReceiveInterval.Milliseconds())
		}
		if p.TransmitInterval != 0 {
			fmt.Fprintf(b, "  transmit-interval %d\n", p.TransmitInterval.Milliseconds())
		}
		if p.DetectMultiplier != 0 {
			fmt.Fprintf(b, "  detect-multiplier %d\n", p.DetectMultiplier)
		}
		b.WriteString(" exit\n")
	}
	b.WriteString("exit\n!\n")
}

var rePasswordLine = regexp.MustCompile(`(?m)^( neighbor \S+ password ).*$`)

// Masked is text with every peer password replaced: what may be hashed
// into state or shown, for a file Render wrote or one read from a host.
func Masked(text string) string { return rePasswordLine.ReplaceAllString(text, "${1}<password>") }
