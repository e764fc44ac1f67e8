package bgp

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/frrtest"
	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/lbhost/frr"
)

// The node's admin's own FRR configuration: tfccm must leave it as is.
const adminConfig = `frr defaults traditional
ip prefix-list admin-marker seq 5 permit 203.0.113.0/24
router bgp 64513
 bgp router-id 10.77.0.2
 neighbor 192.0.2.1 remote-as 65001
 neighbor 192.0.2.1 description upstream
 neighbor 192.0.2.1 shutdown
 address-family ipv4 unicast
  network 203.0.113.0/24
 exit-address-family
exit
`

const torConfig = `frr defaults traditional
router bgp 64512
 bgp router-id 10.77.0.1
 no bgp ebgp-requires-policy
 neighbor 10.77.0.2 remote-as 64513
 neighbor 10.77.0.2 timers 1 3
 neighbor 10.77.0.2 bfd
 neighbor fd77::2 remote-as 64513
 neighbor fd77::2 timers 1 3
 address-family ipv4 unicast
  maximum-paths 4
 exit-address-family
 address-family ipv6 unicast
  neighbor fd77::2 activate
  maximum-paths 4
 exit-address-family
exit
`

type pair struct {
	node, tor *frrtest.FRR
}

func startPair(t *testing.T, nodeConf string) pair {
	name := frrtest.Name()
	node, tor := name+"-n", name+"-t"
	frrtest.Netns(t, node)
	frrtest.Netns(t, tor)
	frrtest.Link(t, node, tor, "eth0", []string{"10.77.0.2/24", "fd77::2/64"}, []string{"10.77.0.1/24", "fd77::1/64"})
	return pair{node: frrtest.Start(t, node, nodeConf), tor: frrtest.Start(t, tor, torConfig)}
}

func wantNode(announce ...string) frr.Node {
	n := frr.Node{Config: frr.Config{
		ASN: 64513, RouterID: netip.MustParseAddr("10.77.0.2"),
		Peers: []frr.Peer{
			{Name: "tor", Address: netip.MustParseAddr("10.77.0.1"), ASN: 64512, Keepalive: time.Second, Hold: 3 * time.Second, Password: "", BFDProfile: "fast"},
			{Name: "tor6", Address: netip.MustParseAddr("fd77::1"), ASN: 64512, Keepalive: time.Second, Hold: 3 * time.Second},
		},
		BFDProfiles: []frr.BFDProfile{{Name: "fast", ReceiveInterval: 100 * time.Millisecond, TransmitInterval: 100 * time.Millisecond, DetectMultiplier: 3}},
		Pools: []frr.Pool{{Name: "default", Prefixes: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("fd00:253::/112")},
			// no-export: the ToR (eBGP) must still get the route, carrying it.
			Communities: []string{"64513:100", "no-export", "64513:1:2"}}},
		Networks: []netip.Prefix{netip.MustParsePrefix("10.77.0.0/24"), netip.MustParsePrefix("fd77::/64")},
	}}
	for _, a := range announce {
		n.Announce = append(n.Announce, netip.MustParseAddr(a))
	}
	return n
}

// waitRoute waits until the ToR's kernel has (or lacks) a route to addr.
func waitRoute(t *testing.T, p pair, addr string, present bool) {
	tor := p.tor
	t.Helper()
	what := "route to " + addr + " at the ToR"
	if !present {
		what = "no " + what
	}
	err := testkit.Poll(context.Background(), 100*time.Millisecond, 60*time.Second, what, func(context.Context) error {
		fam := "-4"
		if strings.Contains(addr, ":") {
			fam = "-6"
		}
		out, err := frrtest.Output("ip", "-n", tor.Netns, fam, "route", "show", addr)
		if err != nil {
			return err
		}
		if has := strings.Contains(out, "proto bgp"); has != present {
			return errors.New(strings.TrimSpace(out))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\nToR's BGP:\n%s\nnode's:\n%s\n%s", err, tor.Vtysh(t, "show bgp summary"), p.node.Vtysh(t, "show bgp all"), runningConfig(t, p.node))
	}
}

func runningConfig(t *testing.T, f *frrtest.FRR) string {
	return f.Vtysh(t, "show running-config")
}

// TestApplyAnnouncesAndWithdraws configures a real node FRR that already
// has its admin's BGP instance: the ToR learns the announced /32 and /128,
// loses them when they are no longer wanted, an unchanged configuration
// changes nothing, and BGP mode off leaves the admin's configuration as it
// was, byte for byte.
func TestApplyAnnouncesAndWithdraws(t *testing.T) {
	frrtest.Skip(t)
	p := startPair(t, adminConfig)
	ctx := context.Background()
	before := runningConfig(t, p.node)

	res, err := Apply(ctx, p.node.RunDir, wantNode("198.51.100.10", "fd00:253::10"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Added == 0 || res.Removed != 0 {
		t.Fatalf("first apply: %+v", res)
	}
	waitRoute(t, p, "198.51.100.10", true)
	waitRoute(t, p, "fd00:253::10", true)
	// Communities reach the ToR.
	if out := p.tor.Vtysh(t, "show bgp ipv4 unicast 198.51.100.10/32"); !strings.Contains(out, "64513:100") || !strings.Contains(out, "no-export") || !strings.Contains(out, "64513:1:2") {
		t.Errorf("communities missing at the ToR:\n%s", out)
	}
	// BFD is up with the profile's timers.
	if out := p.node.Vtysh(t, "show bfd peers"); !strings.Contains(out, "peer 10.77.0.1") {
		t.Errorf("no BFD session on the node:\n%s", out)
	}
	cfg := runningConfig(t, p.node)
	for _, want := range []string{"neighbor 192.0.2.1 description upstream", "network 203.0.113.0/24", "ip prefix-list admin-marker"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("the admin's %q is gone:\n%s", want, cfg)
		}
	}

	res, err = Apply(ctx, p.node.RunDir, wantNode("198.51.100.10", "fd00:253::10"))
	if err != nil || res.Added != 0 || res.Removed != 0 {
		t.Fatalf("second apply of the same configuration: %+v, %v (want no change)\n%s", res, err, runningConfig(t, p.node))
	}

	res, err = Apply(ctx, p.node.RunDir, wantNode("198.51.100.11"))
	if err != nil || res.Removed != 4 || res.Added != 2 {
		t.Fatalf("move: %+v, %v", res, err)
	}
	waitRoute(t, p, "198.51.100.10", false)
	waitRoute(t, p, "fd00:253::10", false)
	waitRoute(t, p, "198.51.100.11", true)

	off := frr.Node{}
	if _, err := Apply(ctx, p.node.RunDir, off); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, p, "198.51.100.11", false)
	after := runningConfig(t, p.node)
	if strings.Contains(after, frr.RouterPrefix) {
		t.Errorf("tfccm objects left:\n%s", after)
	}
	if stripBFD(after) != stripBFD(before) {
		t.Errorf("the admin's configuration changed:\n%s", testkit.LineDiff(before, after))
	}
}

// stripBFD drops an empty "bfd" node (bfdd keeps it once a profile was
// configured, with nothing in it).
func stripBFD(s string) string { return strings.Replace(s, "bfd\nexit\n!\n", "", 1) }

// TestApplyStartsBGPInstance: a node FRR without a BGP instance gets one
// from tfccm; the ASN of an existing one is never changed.
func TestApplyStartsBGPInstance(t *testing.T) {
	frrtest.Skip(t)
	p := startPair(t, "")
	ctx := context.Background()
	if _, err := Apply(ctx, p.node.RunDir, wantNode("198.51.100.20")); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, p, "198.51.100.20", true)
	other := wantNode("198.51.100.20")
	other.ASN = 64600
	_, err := Apply(ctx, p.node.RunDir, other)
	var ae *ASNError
	if !errors.As(err, &ae) || ae.Running != 64513 {
		t.Fatalf("another ASN: %v, want an ASNError naming 64513", err)
	}
	if !strings.Contains(runningConfig(t, p.node), "router bgp 64513") {
		t.Fatal("the running ASN changed")
	}
}

// TestApplyWithoutFRR names the missing socket and changes nothing.
func TestApplyWithoutFRR(t *testing.T) {
	dir := t.TempDir()
	_, err := Apply(context.Background(), dir, wantNode("198.51.100.20"))
	var me *MissingError
	if !errors.As(err, &me) || !strings.Contains(me.Error(), dir+"/bgpd.vty") {
		t.Fatalf("no FRR: %v, want a MissingError naming %s/bgpd.vty", err, dir)
	}
}

// TestApplyKeepsEachPeerInItsFamily: an IPv6 peer gets the IPv6 VIPs
// only and an IPv4 peer the IPv4 ones, whatever the node's instance says
// of `bgp default ipv4-unicast`: with FRR's default (an IPv6 neighbour
// active in IPv4 too) the IPv6 peer is taken out of IPv4, so no IPv4
// route comes in past the import route map (the ToR sends a default
// route; the node's admin runs without ebgp-requires-policy) and no IPv4
// VIP goes out without its communities; with `no bgp default
// ipv4-unicast` the IPv4 peer is activated. A second apply changes
// nothing.
func TestApplyKeepsEachPeerInItsFamily(t *testing.T) {
	frrtest.Skip(t)
	for _, tc := range []struct{ name, instance string }{
		{"FRR's default", "router bgp 64513\n bgp router-id 10.77.0.2\n no bgp ebgp-requires-policy\nexit\n"},
		{"no bgp default ipv4-unicast", "router bgp 64513\n bgp router-id 10.77.0.2\n no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\nexit\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startPair(t, "frr defaults traditional\n"+tc.instance)
			p.tor.Vtysh(t, "configure", "ip route 0.0.0.0/0 blackhole", "ipv6 route ::/0 blackhole", "router bgp 64512",
				"address-family ipv4 unicast", "redistribute static", "exit-address-family",
				"address-family ipv6 unicast", "redistribute static", "exit-address-family")
			ctx := context.Background()
			want := wantNode("198.51.100.10", "fd00:253::10")
			if _, err := Apply(ctx, p.node.RunDir, want); err != nil {
				t.Fatal(err)
			}
			waitRoute(t, p, "198.51.100.10", true)
			waitRoute(t, p, "fd00:253::10", true)
			if sum := p.node.Vtysh(t, "show bgp ipv4 unicast summary"); strings.Contains(sum, "fd77::1") || !strings.Contains(sum, "10.77.0.1") {
				t.Errorf("the node's IPv4 sessions (want 10.77.0.1 alone):\n%s", sum)
			}
			if sum := p.node.Vtysh(t, "show bgp ipv6 unicast summary"); strings.Contains(sum, "10.77.0.1") || !strings.Contains(sum, "fd77::1") {
				t.Errorf("the node's IPv6 sessions (want fd77::1 alone):\n%s", sum)
			}
			if out := p.tor.Vtysh(t, "show bgp ipv4 unicast 198.51.100.10/32"); strings.Contains(out, "fd77::2") {
				t.Errorf("the IPv4 VIP went over the IPv6 session:\n%s", out)
			}
			if out := p.node.Vtysh(t, "show bgp ipv4 unicast"); strings.Contains(out, "0.0.0.0/0") {
				t.Errorf("the node took the ToR's IPv4 default route:\n%s", out)
			}
			res, err := Apply(ctx, p.node.RunDir, want)
			if err != nil || res.Added != 0 || res.Removed != 0 {
				t.Fatalf("second apply of the same configuration: %+v, %v (want no change)\n%s", res, err, runningConfig(t, p.node))
			}
			if _, err := Apply(ctx, p.node.RunDir, frr.Node{}); err != nil {
				t.Fatal(err)
			}
			if cfg := runningConfig(t, p.node); strings.Contains(cfg, "fd77::1") || strings.Contains(cfg, frr.RouterPrefix) {
				t.Errorf("tfccm's lines left:\n%s", cfg)
			}
		})
	}
}

// TestApplyIPv6OnlyNode: a node without IPv4 (its router ID the low 32
// bits of its IPv6 address, RouterID) starts its BGP instance, peers over
// IPv6 alone and the ToR learns its /128.
func TestApplyIPv6OnlyNode(t *testing.T) {
	frrtest.Skip(t)
	p := startPair(t, "")
	want := wantNode("fd00:253::10")
	want.Peers = want.Peers[1:]
	want.RouterID = RouterID([]netip.Addr{netip.MustParseAddr("fd77::2")})
	if _, err := Apply(context.Background(), p.node.RunDir, want); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, p, "fd00:253::10", true)
	if cfg := runningConfig(t, p.node); !strings.Contains(cfg, "bgp router-id 0.0.0.2") {
		t.Errorf("the node's router ID:\n%s", cfg)
	}
}
