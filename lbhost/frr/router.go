// The router side of the peering: tfccm's objects inside a Linux
// router's own FRR configuration, and how they are told apart from the
// admin's.

package frr

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
)

// Router is what tfccm adds to a router the admin runs: a neighbour per LB
// host in the admin's existing `router bgp <ASN>`, the BFD profiles they
// use, an inbound filter that takes only host routes inside Prefixes, and
// ECMP over the hosts. Every object it writes is named tfccm-* (the
// neighbours' descriptions too) and sits in one marked section of the
// file: the rest of the file is the admin's and is never rewritten.
type Router struct {
	// ASN is the router's AS: its configuration must already have
	// `router bgp <ASN>` (tfccm never creates or changes it).
	ASN uint32
	// Neighbors are the LB hosts (Peer.ASN is the hosts' AS); their
	// names become descriptions tfccm-<name>, their BFD profiles
	// profiles tfccm-<name>.
	Neighbors   []Peer
	BFDProfiles []BFDProfile
	// Prefixes are the pools' CIDRs: a neighbour's /32 or /128 inside
	// one is accepted, anything else refused.
	Prefixes []netip.Prefix
	// MaximumPaths is ECMP's number of equal paths per family (0: one
	// per neighbour of the family, at least 2), written only when the
	// admin's configuration has no maximum-paths of its own there.
	MaximumPaths int
	// Networks are the router's interfaces' networks: every neighbour
	// must be on one. Empty: not checked.
	Networks []netip.Prefix
}

// Names of the router-side objects.
const (
	// RouterPrefix starts the name of every object tfccm owns on a router.
	RouterPrefix = "tfccm-"
	// RouterImportMap takes the neighbours' host routes inside the pools.
	RouterImportMap = "tfccm-lb-in"
	// RouterExportMap sends the neighbours nothing.
	RouterExportMap = "tfccm-lb-out"
	sectionBegin    = "! tfccm-begin:"
	sectionEnd      = "! tfccm-end"
)

// Validate checks every field, naming the first wrong one.
func (r Router) Validate() error {
	if err := CheckASN(r.ASN); err != nil {
		return &Error{Field: "asn", Msg: err.Error()}
	}
	profiles, err := validateProfiles(r.BFDProfiles)
	if err != nil {
		return err
	}
	if len(r.Neighbors) == 0 {
		return &Error{Field: "neighbors", Msg: "want at least one LB host"}
	}
	if err := (Config{ASN: r.ASN, Networks: r.Networks}).validatePeers("neighbors", r.Neighbors, profiles); err != nil {
		return err
	}
	if len(r.Prefixes) == 0 {
		return &Error{Field: "prefixes", Msg: "want at least one CIDR (the pools' prefixes)"}
	}
	for i, p := range r.Prefixes {
		if !p.IsValid() || p.Masked() != p {
			return &Error{Field: fmt.Sprintf("prefixes[%d]", i), Msg: fmt.Sprintf("%q is not a network address/length", p)}
		}
	}
	if r.MaximumPaths < 0 || r.MaximumPaths > 64 {
		return &Error{Field: "maximum_paths", Msg: fmt.Sprintf("%d: want 1-64", r.MaximumPaths)}
	}
	return nil
}

// RouterBase is the admin's part of a router's configuration file: the
// file without tfccm's section and without any other tfccm-* object (one
// `write memory` merges the section into the admin's blocks).
func RouterBase(file string) string {
	lines := strings.SplitAfter(file, "\n")
	ours := tfccmNeighbors(file)
	var out []string
	skipBlock, skipProfile := false, false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimRight(l, "\n")
		switch {
		case strings.HasPrefix(t, sectionBegin):
			for i < len(lines) && strings.TrimRight(lines[i], "\n") != sectionEnd {
				i++
			}
			continue
		case skipBlock:
			skipBlock = t != "exit"
			continue
		case skipProfile:
			skipProfile = t != " exit"
			continue
		case strings.HasPrefix(t, "route-map "+RouterPrefix):
			skipBlock = true
			continue
		case strings.HasPrefix(t, " profile "+RouterPrefix):
			skipProfile = true
			continue
		case strings.HasPrefix(t, "ip prefix-list "+RouterPrefix), strings.HasPrefix(t, "ipv6 prefix-list "+RouterPrefix):
			continue
		}
		if f := strings.Fields(t); len(f) >= 2 && f[0] == "neighbor" && ours[f[1]] {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}

var reTfccmNeighbor = regexp.MustCompile(`(?m)^\s*neighbor (\S+) description ` + RouterPrefix)

// tfccmNeighbors are the neighbours described tfccm-*.
func tfccmNeighbors(file string) map[string]bool {
	ours := map[string]bool{}
	for _, m := range reTfccmNeighbor.FindAllStringSubmatch(file, -1) {
		ours[m[1]] = true
	}
	return ours
}

// RouterSection is tfccm's section of a router's file ("" without one).
func RouterSection(file string) string {
	i := strings.Index(file, sectionBegin)
	if i < 0 {
		return ""
	}
	j := strings.Index(file[i:], sectionEnd+"\n")
	if j < 0 {
		return file[i:]
	}
	return file[i : i+j+len(sectionEnd)+1]
}

// HasBGP reports whether base has `router bgp <asn>` (the default VRF's).
func HasBGP(base string, asn uint32) bool {
	return regexp.MustCompile(fmt.Sprintf(`(?m)^router bgp %d\s*$`, asn)).MatchString(base)
}

// hasMaximumPaths reports whether base sets maximum-paths for the family
// (ipv4 or ipv6) in a `router bgp` block.
func hasMaximumPaths(base, family string) bool {
	in := false
	for _, l := range strings.Split(base, "\n") {
		switch {
		case strings.HasPrefix(l, " address-family "+family+" unicast"):
			in = true
		case strings.HasPrefix(l, " exit-address-family"):
			in = false
		case in && strings.HasPrefix(strings.TrimSpace(l), "maximum-paths "):
			return true
		}
	}
	return false
}

// RenderRouter returns the router's file with tfccm's section for r
// (after what is the admin's: base, from RouterBase), or the first field
// error. The admin's lines stay byte for byte.
func RenderRouter(base string, r Router) (string, error) {
	if err := r.Validate(); err != nil {
		return "", err
	}
	if !HasBGP(base, r.ASN) {
		return "", &Error{Field: "asn", Msg: fmt.Sprintf("the router's configuration has no `router bgp %d`: tfccm adds its neighbours to the admin's BGP instance and never creates one", r.ASN)}
	}
	var b strings.Builder
	b.WriteString(base)
	if base != "" && !strings.HasSuffix(base, "\n") {
		b.WriteString("\n")
	}
	b.WriteString(RenderRouterSection(base, r))
	return b.String(), nil
}

// RenderRouterSection is tfccm's section alone (r valid).
func RenderRouterSection(base string, r Router) string {
	var b strings.Builder
	b.WriteString(sectionBegin + " written by tfccm's lbhost_bgp_router (lbhost/frr): tfccm rewrites this section and nothing else.\n")
	var v4, v6 int
	for i, p := range r.Prefixes {
		if p.Addr().Is4() {
			v4++
			fmt.Fprintf(&b, "ip prefix-list %slb seq %d permit %s ge 32\n", RouterPrefix, 5*(i+1), p)
		} else {
			v6++
			fmt.Fprintf(&b, "ipv6 prefix-list %slb6 seq %d permit %s ge 128\n", RouterPrefix, 5*(i+1), p)
		}
	}
	if v4 > 0 {
		fmt.Fprintf(&b, "route-map %s permit 10\n match ip address prefix-list %slb\nexit\n", RouterImportMap, RouterPrefix)
	}
	if v6 > 0 {
		// The hosts' global addresses as next hops, not their link-local ones.
		fmt.Fprintf(&b, "route-map %s permit 20\n match ipv6 address prefix-list %slb6\n set ipv6 next-hop prefer-global\nexit\n", RouterImportMap, RouterPrefix)
	}
	fmt.Fprintf(&b, "route-map %s deny 10\nexit\n", RouterExportMap)
	fmt.Fprintf(&b, "router bgp %d\n", r.ASN)
	for _, p := range r.Neighbors {
		a := p.Address.String()
		fmt.Fprintf(&b, " neighbor %s remote-as %d\n neighbor %s description %s%s\n", a, p.ASN, a, RouterPrefix, p.Name)
		if p.Port != 0 {
			fmt.Fprintf(&b, " neighbor %s port %d\n", a, p.Port)
		}
		if p.Keepalive != 0 {
			fmt.Fprintf(&b, " neighbor %s timers %d %d\n", a, int(p.Keepalive.Seconds()), int(p.Hold.Seconds()))
		}
		if p.Password != "" {
			fmt.Fprintf(&b, " neighbor %s password %s\n", a, p.Password)
		}
		if p.BFDProfile != "" {
			fmt.Fprintf(&b, " neighbor %s bfd profile %s%s\n", a, RouterPrefix, p.BFDProfile)
		}
	}
	for _, fam := range []struct {
		name string
		v6   bool
		n    int
	}{{"ipv4", false, v4}, {"ipv6", true, v6}} {
		var ns []string
		for _, p := range r.Neighbors {
			if p.Address.Is6() == fam.v6 {
				ns = append(ns, p.Address.String())
			}
		}
		if len(ns) == 0 {
			continue
		}
		fmt.Fprintf(&b, " address-family %s unicast\n", fam.name)
		if !hasMaximumPaths(base, fam.name) {
			fmt.Fprintf(&b, "  maximum-paths %d\n", r.maxPaths(len(ns)))
		}
		for _, a := range ns {
			fmt.Fprintf(&b, "  neighbor %s activate\n", a)
			if fam.n > 0 {
				fmt.Fprintf(&b, "  neighbor %s route-map %s in\n", a, RouterImportMap)
			}
			fmt.Fprintf(&b, "  neighbor %s route-map %s out\n", a, RouterExportMap)
		}
		b.WriteString(" exit-address-family\n")
	}
	b.WriteString("exit\n")
	if len(r.BFDProfiles) > 0 {
		named := make([]BFDProfile, len(r.BFDProfiles))
		for i, p := range r.BFDProfiles {
			named[i] = p
			named[i].Name = RouterPrefix + p.Name
		}
		var bfd strings.Builder
		renderBFD(&bfd, named)
		b.WriteString(strings.TrimSuffix(bfd.String(), "!\n"))
	}
	b.WriteString(sectionEnd + "\n")
	return b.String()
}

func (r Router) maxPaths(neighbors int) int {
	if r.MaximumPaths != 0 {
		return r.MaximumPaths
	}
	return max(2, neighbors)
}
