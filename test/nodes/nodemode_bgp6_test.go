package nodes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/internal/frrtest"
	"github.com/tfccm/tfccm/nodelb/vipapi"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/l2seg"
)

// torDualConfig is a top-of-rack FRR (AS 64512) peering with the nodes
// over IPv4 (nodeAddrs) and over IPv6 (nodeAddrs6), timers 1 3 and BFD at
// 100 ms on every session, ECMP over up to 8 paths in both families; it
// sends the nodes a default route of each family (which they must not
// take). FRR's defaults activate the IPv6 sessions in IPv4 too: only the
// nodes' side keeps each family on its own sessions. The IPv6 routes'
// next hops are the nodes' global addresses (a router takes the
// link-local one by default), so a route names the nodes it goes through.
func torDualConfig(routerID string, nodeAddrs, nodeAddrs6 []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "frr defaults traditional\nbfd\n profile fast\n  receive-interval 100\n  transmit-interval 100\n exit\nexit\n"+
		"ip route 0.0.0.0/0 blackhole\nipv6 route ::/0 blackhole\n"+
		"route-map nodes6-in permit 10\n set ipv6 next-hop prefer-global\nexit\n"+
		"router bgp 64512\n bgp router-id %s\n no bgp ebgp-requires-policy\n", routerID)
	for _, a := range append(slices.Clone(nodeAddrs), nodeAddrs6...) {
		fmt.Fprintf(&b, " neighbor %s remote-as 64513\n neighbor %s timers 1 3\n neighbor %s bfd profile fast\n", a, a, a)
	}
	b.WriteString(" address-family ipv4 unicast\n  redistribute static\n")
	b.WriteString("  maximum-paths 8\n exit-address-family\n address-family ipv6 unicast\n  redistribute static\n")
	for _, a := range nodeAddrs6 {
		fmt.Fprintf(&b, "  neighbor %s activate\n  neighbor %s route-map nodes6-in in\n", a, a)
	}
	b.WriteString("  maximum-paths 8\n exit-address-family\nexit\n")
	return b.String()
}

// TestNodeModeBGPAgentsIPv6: BGP mode's node agents (real processes, each
// node its own FRR) on a dual-stack segment, against a real
// kube-apiserver; the top-of-rack FRR peers with every node over IPv4 and
// over IPv6 (ECMP, BFD on both). Shown: each agent reports both its
// sessions Established in the NodeBGP's status; an IPv6 NodeVIP and a
// dual-stack Service's pair of NodeVIPs with announce bgp are announced
// by every node (the ToR's /128 and /32 routes have one next hop per
// node) and IPv6 flows from many client ports reach each node; a node's
// bgpd killed withdraws its IPv6 path while the others serve; a node gone
// silent towards the ToR (no TCP connection notices) loses its IPv6 and
// IPv4 paths by BFD; deleting a NodeVIP withdraws its /128 alone; deleting the NodeBGP
// leaves no tfccm object in any node's FRR (IPv6 prefix lists, static
// routes and neighbours included), the admin's own lines intact.
func TestNodeModeBGPAgentsIPv6(t *testing.T) {
	needNodes(t)
	frrtest.Skip(t)
	nodes := []string{"a", "b", "c"}
	seg := l2seg.New(t, l2seg.Options{Prefix: fmt.Sprintf("n6%d", os.Getpid()%100000), Net: fmt.Sprintf("10.93.%d", os.Getpid()%250), Nodes: nodes, Host: true})
	const vip6, dual4, dual6 = "fd00:253::10", "198.51.100.20", "fd00:253::20"
	seg.AddVIPs(t, vip6, dual4, dual6)
	client := seg.Netns(l2seg.Client)
	frrtest.Must(t, "ip", "netns", "exec", client, "sysctl", "-qw", "net.ipv4.fib_multipath_hash_policy=1")
	frrtest.Must(t, "ip", "netns", "exec", client, "sysctl", "-qw", "net.ipv6.fib_multipath_hash_policy=1")
	addr6 := map[string]string{}
	var all4, all6 []string
	for i, n := range nodes {
		addr6[n] = seg.Addr6(i + 1)
		all4 = append(all4, seg.NodeAddr(n))
		all6 = append(all6, addr6[n])
	}
	tor := frrtest.Start(t, client, torDualConfig(seg.Addr(200), all4, all6))
	const adminLine = "ipv6 prefix-list admin-marker6 seq 5 permit 2001:db8::/32"
	ba := startBGPAgents(t, seg, nodes, adminLine)
	frr, bgps, vips := ba.frr, ba.bgps, ba.vips
	ctx := context.Background()

	nb, err := vipapi.BGPToUnstructured(&vipapi.NodeBGP{ObjectMeta: metav1.ObjectMeta{Name: vipapi.BGPName, Namespace: l2seg.Namespace},
		Spec: vipapi.NodeBGPSpec{ASN: 64513,
			Peers: []vipapi.BGPPeer{
				{Name: "tor", Address: seg.Addr(200), ASN: 64512, KeepaliveTime: 1, HoldTime: 3, BFDProfile: "fast"},
				{Name: "tor6", Address: seg.Addr6(200), ASN: 64512, KeepaliveTime: 1, HoldTime: 3, BFDProfile: "fast"},
			},
			BFDProfiles: []vipapi.BFDProfile{{Name: "fast", ReceiveInterval: 100, TransmitInterval: 100}},
			Pools:       []vipapi.BGPPool{{Name: "default", Prefixes: []string{"198.51.100.0/24", "fd00:253::/112"}, Communities: []string{"64513:100"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bgps.Create(ctx, nb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := harness.Eventually(ctx, 2*time.Minute, "every node reports its sessions with tor and tor6 Established", func(ctx context.Context) error {
		u, err := bgps.Get(ctx, vipapi.BGPName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		b, err := vipapi.BGPFromUnstructured(u)
		if err != nil {
			return err
		}
		var ok []string
		for _, n := range b.Status.Nodes {
			est := map[string]bool{}
			for _, s := range n.Sessions {
				est[s.Peer] = s.State == "Established" && s.Since != nil
			}
			if n.Configured && len(n.Sessions) == 2 && est["tor"] && est["tor6"] {
				ok = append(ok, n.Name)
			}
		}
		if len(ok) != len(nodes) {
			return fmt.Errorf("status %+v", b.Status)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	create := func(name, service, addr string) {
		t.Helper()
		obj, err := vipapi.ToUnstructured(&vipapi.NodeVIP{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l2seg.Namespace},
			Spec: vipapi.NodeVIPSpec{Address: addr, Service: vipapi.ServiceRef{Namespace: "shop", Name: service}, ExternalTrafficPolicy: vipapi.PolicyCluster,
				Ports: []vipapi.Port{{Protocol: "TCP", Port: 80}}, Nodes: nodes, Announce: vipapi.AnnounceBGP}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := vips.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// nextHops are the ToR's kernel next hops to addr.
	nextHops := func(addr string) []string {
		fam, bits := "-4", "/32"
		if strings.Contains(addr, ":") {
			fam, bits = "-6", "/128"
		}
		out, _ := frrtest.Output("ip", "-n", client, fam, "route", "show", addr+bits)
		var hops []string
		for _, f := range strings.Split(out, "\n") {
			fs := strings.Fields(f)
			for i := range fs {
				if fs[i] == "via" && i+1 < len(fs) {
					hops = append(hops, fs[i+1])
				}
			}
		}
		slices.Sort(hops)
		return hops
	}
	of := func(m func(string) string, ns ...string) []string {
		var out []string
		for _, n := range ns {
			out = append(out, m(n))
		}
		slices.Sort(out)
		return out
	}
	v6 := func(n string) string { return addr6[n] }
	waitHops := func(addr string, want []string, what string) time.Duration {
		t.Helper()
		start := time.Now()
		if err := harness.Eventually(ctx, time.Minute, what, func(context.Context) error {
			if got := nextHops(addr); !slices.Equal(got, want) {
				return fmt.Errorf("next hops %v, want %v", got, want)
			}
			return nil
		}); err != nil {
			t.Fatalf("%v\nToR:\n%s", err, tor.Vtysh(t, "show bgp ipv6 unicast", "show bgp ipv4 unicast", "show bgp summary"))
		}
		return time.Since(start)
	}
	announcers := func(name string) []string {
		u, err := vips.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		v, err := vipapi.FromUnstructured(u)
		if err != nil {
			return nil
		}
		if c := v.Status.Announced(); c == nil || c.Status != metav1.ConditionTrue {
			return nil
		}
		return v.Status.Announcers
	}

	create("web-6", "web-6", vip6)
	create("web-ds-4", "web-ds", dual4)
	create("web-ds-6", "web-ds", dual6)
	waitHops(vip6, of(v6, nodes...), "the ToR routes the IPv6 VIP over every node")
	waitHops(dual6, of(v6, nodes...), "the ToR routes the dual-stack Service's IPv6 VIP over every node")
	waitHops(dual4, of(seg.NodeAddr, nodes...), "the ToR routes the dual-stack Service's IPv4 VIP over every node")
	for _, name := range []string{"web-6", "web-ds-4", "web-ds-6"} {
		if err := harness.Eventually(ctx, time.Minute, "every node announces "+name, func(context.Context) error {
			if got := announcers(name); !slices.Equal(got, nodes) {
				return fmt.Errorf("announcers %v", got)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Each node keeps each family on its own sessions and takes no
	// route from the ToR (its default routes).
	for _, n := range nodes {
		if sum := frr[n].Vtysh(t, "show bgp ipv4 unicast summary"); strings.Contains(sum, seg.Addr6(200)) {
			t.Errorf("node %s's IPv6 session carries IPv4:\n%s", n, sum)
		}
		for _, fam := range []string{"-4", "-6"} {
			if out, _ := frrtest.Output("ip", "-n", seg.Netns(n), fam, "route", "show", "proto", "bgp"); strings.TrimSpace(out) != "" {
				t.Errorf("node %s took routes from the ToR:\n%s", n, out)
			}
		}
	}
	spread := func(vip string, want []string) map[string]int {
		t.Helper()
		count := map[string]int{}
		for i := 0; i < 60; i++ {
			n, err := seg.Ask(vip, 3*time.Second)
			if err != nil {
				t.Fatalf("request %d to %s: %v", i, vip, err)
			}
			count[n]++
		}
		for _, n := range want {
			if count[n] == 0 {
				t.Fatalf("no flow to %s reached node %s: %v", vip, n, count)
			}
		}
		return count
	}
	t.Logf("60 IPv6 flows over the nodes: %v", spread(vip6, nodes))
	t.Logf("60 flows to the dual-stack Service's IPv6 VIP: %v, to its IPv4 VIP: %v", spread(dual6, nodes), spread(dual4, nodes))

	// withdrawn polls the ToR's kernel every 10 ms until each address's
	// next hops are the wanted ones, and returns when each got there.
	withdrawn := func(want map[string][]string, what string) map[string]time.Duration {
		t.Helper()
		start, took := time.Now(), map[string]time.Duration{}
		for len(took) < len(want) {
			if time.Since(start) > time.Minute {
				t.Fatalf("%s: after a minute only %v\nToR:\n%s", what, took, tor.Vtysh(t, "show bgp ipv6 unicast", "show bgp ipv4 unicast", "show bfd peers brief"))
			}
			for addr, hops := range want {
				if _, ok := took[addr]; !ok && slices.Equal(nextHops(addr), hops) {
					took[addr] = time.Since(start)
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		return took
	}
	round := func(m map[string]time.Duration) string {
		return fmt.Sprintf("IPv6 %v, IPv4 %v", m[dual6].Round(time.Millisecond), m[dual4].Round(time.Millisecond))
	}

	// A node's bgpd crashes: its sessions end (the kernel closes their
	// TCP connections, bfdd takes the BFD sessions down with their
	// client), the ToR withdraws its paths, the others serve.
	frr["a"].Kill("bgpd")
	took := withdrawn(map[string][]string{vip6: of(v6, "b", "c"), dual6: of(v6, "b", "c"), dual4: of(seg.NodeAddr, "b", "c")}, "node a's paths withdrawn")
	t.Logf("node a's bgpd killed: its paths withdrawn in %s", round(took))
	if c := spread(vip6, []string{"b", "c"}); c["a"] != 0 {
		t.Fatalf("IPv6 flows still reach node a: %v", c)
	}
	frr["a"].StartDaemon(t, "bgpd", "")
	waitHops(vip6, of(v6, nodes...), "node a announces the IPv6 VIP again after its bgpd restarted (the agent reconfigures it)")
	waitHops(dual6, of(v6, nodes...), "node a announces the dual-stack IPv6 VIP again")
	waitHops(dual4, of(seg.NodeAddr, nodes...), "node a announces the dual-stack IPv4 VIP again")

	// Node b goes silent towards the ToR (every packet between them
	// dropped, both families: a failure no TCP connection reports):
	// BFD alone takes its IPv6 and IPv4 paths down, well before the 3 s
	// hold time; the silence lifted, b announces again.
	blackhole := fmt.Sprintf("table inet v6bgp-cut {\n chain in {\n  type filter hook input priority -300; policy accept;\n  ip saddr %s drop\n  ip6 saddr %s drop\n }\n"+
		" chain out {\n  type filter hook output priority -300; policy accept;\n  ip daddr %s drop\n  ip6 daddr %s drop\n }\n}\n", seg.Addr(200), seg.Addr6(200), seg.Addr(200), seg.Addr6(200))
	cut := exec.Command("ip", "netns", "exec", seg.Netns("b"), "nft", "-f", "-")
	cut.Stdin = strings.NewReader(blackhole)
	if out, err := cut.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v\n%s", err, out)
	}
	took = withdrawn(map[string][]string{dual6: of(v6, "a", "c"), dual4: of(seg.NodeAddr, "a", "c")}, "node b's paths withdrawn by BFD")
	t.Logf("node b silent: its paths withdrawn in %s (BFD 100 ms x 3)", round(took))
	// The ToR says why each session with b went: BFD, not the hold time.
	for _, peer := range []string{seg.Addr6(2), seg.Addr(2)} {
		out := tor.Vtysh(t, "show bgp neighbors "+peer)
		var reset string
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "Last reset") {
				reset = strings.TrimSpace(l)
			}
		}
		t.Logf("the ToR's session with node b (%s): %s", peer, reset)
		if !strings.Contains(reset, "BFD") {
			t.Errorf("the ToR's session with node b (%s) did not go by BFD: %q", peer, reset)
		}
	}
	frrtest.Must(t, "ip", "netns", "exec", seg.Netns("b"), "nft", "delete", "table", "inet", "v6bgp-cut")
	waitHops(dual6, of(v6, nodes...), "node b announces the IPv6 VIP again")
	waitHops(dual4, of(seg.NodeAddr, nodes...), "node b announces the IPv4 VIP again")

	// Deleting the IPv6 NodeVIP withdraws its /128; the others stay.
	if err := vips.Delete(ctx, "web-6", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitHops(vip6, nil, "the IPv6 VIP withdrawn from the ToR")
	if got := nextHops(dual6); !slices.Equal(got, of(v6, nodes...)) {
		t.Fatalf("the dual-stack Service's IPv6 VIP lost paths with the other's deletion: %v", got)
	}
	for _, n := range nodes {
		if cfg := frr[n].Vtysh(t, "show running-config"); strings.Contains(cfg, vip6+"/128") {
			t.Fatalf("node %s still holds the deleted VIP:\n%s", n, cfg)
		}
	}
	for _, name := range []string{"web-ds-4", "web-ds-6"} {
		if err := vips.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitHops(dual6, nil, "the dual-stack IPv6 VIP withdrawn")
	waitHops(dual4, nil, "the dual-stack IPv4 VIP withdrawn")

	// The NodeBGP deleted: nothing of tfccm's stays in any node's FRR.
	if err := bgps.Delete(ctx, vipapi.BGPName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := harness.Eventually(ctx, time.Minute, "no tfccm object in node "+n+"'s FRR", func(context.Context) error {
			cfg := frr[n].Vtysh(t, "show running-config")
			for _, left := range []string{"tfccm", "tag 29798", "neighbor " + seg.Addr6(200), "neighbor " + seg.Addr(200), "fd00:253:"} {
				if strings.Contains(cfg, left) {
					return fmt.Errorf("left %q:\n%s", left, cfg)
				}
			}
			if !strings.Contains(cfg, adminLine) {
				return fmt.Errorf("the admin's line is gone:\n%s", cfg)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
