package frr

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestNodeBlocks: a node's objects as FRR shows them (defaults omitted,
// BFD profiles and peers named tfccm-*, one network and static route per
// address), and an address outside every pool refused naming it.
func TestNodeBlocks(t *testing.T) {
	n := Node{Config: Config{ASN: 64513, RouterID: netip.MustParseAddr("10.0.0.2"),
		Peers:       []Peer{{Name: "tor", Address: netip.MustParseAddr("10.0.0.1"), ASN: 64512, BFDProfile: "fast"}, {Name: "tor6", Address: netip.MustParseAddr("fd00::1"), ASN: 64512}},
		BFDProfiles: []BFDProfile{{Name: "fast", ReceiveInterval: 100 * time.Millisecond, TransmitInterval: 300 * time.Millisecond, DetectMultiplier: 3}},
		Pools:       []Pool{{Name: "p", Prefixes: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}, Communities: []string{"64513:1"}}}},
		Announce: []netip.Addr{netip.MustParseAddr("198.51.100.7")}}
	blocks, err := n.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, b := range blocks {
		lines = append(lines, b.Daemon+": "+strings.Join(b.Context, " > ")+" | "+b.Text+" {"+strings.Join(b.Body, "; ")+"}")
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"bfdd: bfd | profile tfccm-fast {receive-interval 100}",
		"bgpd: router bgp 64513 | neighbor 10.0.0.1 description tfccm-tor {}",
		"bgpd: router bgp 64513 | neighbor 10.0.0.1 bfd profile tfccm-fast {}",
		"bgpd: router bgp 64513 > address-family ipv6 unicast | neighbor fd00::1 activate {}",
		"bgpd: router bgp 64513 > address-family ipv4 unicast | network 198.51.100.7/32 route-map tfccm-originate {}",
		"staticd:  | ip route 198.51.100.7/32 lo tag 29798 {}",
		"bgpd:  | route-map tfccm-export permit 10 {match ip address prefix-list tfccm-pool-p; set community 64513:1}",
		// Communities are set towards peers, never when the route is
		// originated (no-export there would keep it from eBGP peers).
		"bgpd:  | route-map tfccm-originate permit 10 {match ip address prefix-list tfccm-pool-p}",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "neighbor 10.0.0.1 activate") {
		t.Errorf("an IPv4 neighbour's default activation is written (FRR shows none):\n%s", got)
	}
	// An IPv6 neighbour, active in IPv4 by FRR's default, is taken out of it.
	if want := "bgpd: router bgp 64513 > address-family ipv4 unicast | no neighbor fd00::1 activate {}"; !strings.Contains(got, want) {
		t.Errorf("missing %q in\n%s", want, got)
	}
	n.Announce = append(n.Announce, netip.MustParseAddr("203.0.113.1"))
	var fe *Error
	if _, err := n.Blocks(); !errors.As(err, &fe) || fe.Field != "announce[1]" {
		t.Fatalf("an address outside every pool: %v", err)
	}
}

// TestNodeBlocksNoDefaultIPv4: in an instance with `no bgp default
// ipv4-unicast` every neighbour is activated in its own family only.
func TestNodeBlocksNoDefaultIPv4(t *testing.T) {
	n := Node{Config: Config{ASN: 64513, RouterID: netip.MustParseAddr("10.0.0.2"),
		Peers: []Peer{{Name: "tor", Address: netip.MustParseAddr("10.0.0.1"), ASN: 64512}, {Name: "tor6", Address: netip.MustParseAddr("fd00::1"), ASN: 64512}},
		Pools: []Pool{{Name: "p", Prefixes: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}}}},
		NoDefaultIPv4: true}
	blocks, err := n.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	var activation []string
	for _, b := range blocks {
		if strings.HasSuffix(b.Text, " activate") {
			activation = append(activation, strings.Join(b.Context[1:], "")+" | "+b.Text)
		}
	}
	want := []string{"address-family ipv4 unicast | neighbor 10.0.0.1 activate", "address-family ipv6 unicast | neighbor fd00::1 activate"}
	if strings.Join(activation, "\n") != strings.Join(want, "\n") {
		t.Fatalf("activation lines:\n%s\nwant:\n%s", strings.Join(activation, "\n"), strings.Join(want, "\n"))
	}
}
