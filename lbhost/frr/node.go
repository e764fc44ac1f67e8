// A cluster node's side of the peering: tfccm's objects inside the
// node's own FRR, as configuration lines the node agent applies through
// the daemons' vty sockets (package nodelb/bgp).

package frr

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"
)

// Node is what tfccm adds to a node's FRR: its peers in `router bgp ASN`
// (descriptions tfccm-<name>), the BFD profiles they use (tfccm-<name>),
// per pool a prefix list and an entry of the export route map (its
// communities and local preference, set towards peers) and of the
// originate route map (match only), the import route map that refuses
// every route a peer sends, and one `network` statement (route map
// tfccm-originate) per address the node announces. Everything is named
// tfccm-*; the rest of the node's FRR is the admin's.
type Node struct {
	Config
	// Announce are the addresses the node announces now (each inside a
	// pool; one outside every pool is an error).
	Announce []netip.Addr
	// NoDefaultIPv4 says the node's BGP instance runs with `no bgp
	// default ipv4-unicast`: its neighbours are in no address family
	// until activated. Otherwise (FRR's default) every neighbour, an IPv6
	// one too, is active in IPv4 unicast until deactivated.
	NoDefaultIPv4 bool
}

// Block is one configuration object: a line (Body empty) or a block
// (a route map entry, a BFD profile) owned as a whole, in its context
// (the nodes above it, e.g. "router bgp 64513", "address-family ipv4
// unicast"; none for a top-level line).
type Block struct {
	Daemon  string
	Context []string
	Text    string
	Body    []string
}

// Key identifies b (daemon, context, text and body, in any order: FRR
// shows a block's lines in its own order).
func (b Block) Key() string {
	body := append([]string(nil), b.Body...)
	sort.Strings(body)
	return b.Daemon + "|" + strings.Join(b.Context, "|") + "|" + b.Text + "|" + strings.Join(body, "|")
}

// StaticTag marks the static routes tfccm adds to a node (staticd's
// `ip route <address> lo tag StaticTag`): bgpd announces a network
// statement only while a route to it is in zebra's table (its import
// check), and the route sends what kube-proxy did not take to the
// loopback, where it ends.
const StaticTag = 29798

// NodePeerDescription is the description of a peer tfccm adds to a node.
func NodePeerDescription(name string) string { return RouterPrefix + name }

// NodeBFDProfile is the name of a BFD profile tfccm adds to a node.
func NodeBFDProfile(name string) string { return RouterPrefix + name }

// BGPContext is the context of lines inside `router bgp asn`.
func BGPContext(asn uint32) string { return fmt.Sprintf("router bgp %d", asn) }

// AddressFamily is the context of a family's lines in router bgp.
func AddressFamily(v6 bool) string {
	if v6 {
		return "address-family ipv6 unicast"
	}
	return "address-family ipv4 unicast"
}

// Validate checks the configuration and that every address is in a pool.
func (n Node) Validate() error {
	if err := n.Config.Validate(); err != nil {
		return err
	}
	for i, a := range n.Announce {
		if n.pool(a) == nil {
			return &Error{Field: fmt.Sprintf("announce[%d]", i), Msg: fmt.Sprintf("%s is outside every pool", a)}
		}
	}
	return nil
}

func (n Node) pool(a netip.Addr) *Pool {
	for i, p := range n.Pools {
		for _, pr := range p.Prefixes {
			if pr.Contains(a) {
				return &n.Pools[i]
			}
		}
	}
	return nil
}

// Blocks are n's objects in FRR's running-config form (bgpd's and
// bfdd's), sorted, or the first field error.
func (n Node) Blocks() ([]Block, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	var out []Block
	bgp := BGPContext(n.ASN)
	for _, p := range n.Pools {
		for i, pr := range p.Prefixes {
			if pr.Addr().Is4() {
				out = append(out, Block{Daemon: "bgpd", Text: fmt.Sprintf("ip prefix-list %s seq %d permit %s ge 32", prefixList(p.Name, false), 5*(i+1), pr)})
			} else {
				out = append(out, Block{Daemon: "bgpd", Text: fmt.Sprintf("ipv6 prefix-list %s seq %d permit %s ge 128", prefixList(p.Name, true), 5*(i+1), pr)})
			}
		}
	}
	for _, e := range routeMapEntries(n.Pools) {
		out = append(out, Block{Daemon: "bgpd", Text: fmt.Sprintf("route-map %s permit %d", ExportMap, e.seq), Body: append([]string{e.match}, e.sets...)})
		out = append(out, Block{Daemon: "bgpd", Text: fmt.Sprintf("route-map %s permit %d", OriginateMap, e.seq), Body: []string{e.match}})
	}
	out = append(out, Block{Daemon: "bgpd", Text: fmt.Sprintf("route-map %s deny 10", ImportMap)})
	for _, p := range n.BFDProfiles {
		// FRR shows no line for a default (3 packets, 300 ms).
		var body []string
		if p.DetectMultiplier != 0 && p.DetectMultiplier != 3 {
			body = append(body, fmt.Sprintf("detect-multiplier %d", p.DetectMultiplier))
		}
		if p.ReceiveInterval != 0 && p.ReceiveInterval != 300*time.Millisecond {
			body = append(body, fmt.Sprintf("receive-interval %d", p.ReceiveInterval.Milliseconds()))
		}
		if p.TransmitInterval != 0 && p.TransmitInterval != 300*time.Millisecond {
			body = append(body, fmt.Sprintf("transmit-interval %d", p.TransmitInterval.Milliseconds()))
		}
		out = append(out, Block{Daemon: "bfdd", Context: []string{"bfd"}, Text: "profile " + NodeBFDProfile(p.Name), Body: body})
	}
	for _, p := range n.Peers {
		a := p.Address.String()
		line := func(f string, args ...any) {
			out = append(out, Block{Daemon: "bgpd", Context: []string{bgp}, Text: "neighbor " + a + " " + fmt.Sprintf(f, args...)})
		}
		line("remote-as %d", p.ASN)
		line("description %s", NodePeerDescription(p.Name))
		// A withdrawal goes out at once, not after eBGP's 30 s MRAI.
		line("advertisement-interval 0")
		if p.Port != 0 {
			line("port %d", p.Port)
		}
		if p.Keepalive != 0 {
			line("timers %d %d", int(p.Keepalive.Seconds()), int(p.Hold.Seconds()))
		}
		if p.Password != "" {
			line("password %s", p.Password)
		}
		if p.BFDProfile != "" {
			// FRR shows both lines for a neighbour with a profile.
			line("bfd")
			line("bfd profile %s", NodeBFDProfile(p.BFDProfile))
		}
		af := []string{bgp, AddressFamily(p.Address.Is6())}
		for _, l := range []string{"activate", "route-map " + ImportMap + " in", "route-map " + ExportMap + " out"} {
			if l == "activate" && !p.Address.Is6() && !n.NoDefaultIPv4 {
				// IPv4 neighbours are active in IPv4 by default (FRR
				// shows no line for it).
				continue
			}
			out = append(out, Block{Daemon: "bgpd", Context: af, Text: "neighbor " + a + " " + l})
		}
		if p.Address.Is6() && !n.NoDefaultIPv4 {
			// An IPv6 peer gets the IPv6 VIPs only: active in IPv4 by
			// default, it would get the IPv4 VIPs without the pools'
			// communities and send the node IPv4 routes past the import
			// route map (which is the IPv6 family's).
			out = append(out, Block{Daemon: "bgpd", Context: []string{bgp, AddressFamily(false)}, Text: "no neighbor " + a + " activate"})
		}
	}
	for _, a := range n.Announce {
		ip := "ip"
		if a.Is6() {
			ip = "ipv6"
		}
		out = append(out, Block{Daemon: "staticd", Text: fmt.Sprintf("%s route %s lo tag %d", ip, netip.PrefixFrom(a, a.BitLen()), StaticTag)})
		out = append(out, Block{Daemon: "bgpd", Context: []string{bgp, AddressFamily(a.Is6())}, Text: fmt.Sprintf("network %s route-map %s", netip.PrefixFrom(a, a.BitLen()), OriginateMap)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}
