// Package l2seg builds one L2 network segment of network namespaces for
// node-mode tests: a bridge in a namespace of its own, nodes and a client on
// veths, optionally the host on a veth too (so processes in the nodes reach
// a control plane on the host). Each node takes packets for the segment's
// VIPs on port 80 to its own port 8080, as kube-proxy takes a load balancer
// IP (nftables DNAT in prerouting), and serves its name there, so a client
// sees which node got its connection. It needs root; everything is removed
// when the test ends.
package l2seg

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/test/localcloud"
)

// Options shape a segment.
type Options struct {
	// Prefix names the namespaces (<prefix>-sw, <prefix>-<node>, <prefix>-client)
	// and the host's link (<prefix>-h); at most 8 characters.
	Prefix string
	// Net is the IPv4 /24 as its first three octets ("10.98.0"); the IPv6
	// /64 is fd<2nd>:<3rd>::/64 with the same host numbers (hex).
	Net string
	// Nodes are the node names: node i (from 0) has host number i+1.
	Nodes []string
	// Host links the host to the segment at host number 254.
	Host bool
	// VIPs are the addresses the nodes take port 80 of to their port 8080.
	VIPs []string
	// NoNetRaw are nodes whose agents run without CAP_NET_RAW (they cannot
	// answer for or announce a VIP).
	NoNetRaw []string
}

// Segment is a built segment.
type Segment struct {
	opts Options
	// MACs are the nodes' hardware addresses, by node name.
	MACs map[string]string
}

// Client is the client's name among the segment's namespaces.
const Client = "client"

// Sh runs a command and fails the test when it fails.
func Sh(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// New builds the segment; it skips the test without root or nft.
func New(t testing.TB, opts Options) *Segment {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("needs nft")
	}
	s := &Segment{opts: opts, MACs: map[string]string{}}
	sw := opts.Prefix + "-sw"
	Sh(t, "ip", "netns", "add", sw)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", sw).Run() })
	Sh(t, "ip", "-n", sw, "link", "add", "br0", "type", "bridge")
	Sh(t, "ip", "-n", sw, "link", "set", "br0", "up")
	names := append(append([]string(nil), opts.Nodes...), Client)
	for i, n := range names {
		host := i + 1
		if n == Client {
			host = 200
		}
		ns := s.Netns(n)
		Sh(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		port := fmt.Sprintf("p%d", host)
		Sh(t, "ip", "-n", sw, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
		Sh(t, "ip", "-n", sw, "link", "set", port, "master", "br0", "up")
		// No duplicate address detection: the link-local address is usable at once.
		Sh(t, "ip", "netns", "exec", ns, "sh", "-c", "echo 0 > /proc/sys/net/ipv6/conf/eth0/accept_dad")
		Sh(t, "ip", "-n", ns, "link", "set", "lo", "up")
		Sh(t, "ip", "-n", ns, "addr", "add", s.Addr(host)+"/24", "dev", "eth0")
		Sh(t, "ip", "-n", ns, "addr", "add", s.Addr6(host)+"/64", "dev", "eth0", "nodad")
		Sh(t, "ip", "-n", ns, "link", "set", "eth0", "up")
		s.MACs[n] = strings.Fields(Sh(t, "ip", "-n", ns, "-br", "link", "show", "eth0"))[2]
		if n == Client {
			continue
		}
		s.serve(t, n)
	}
	s.AddVIPs(t, opts.VIPs...)
	if opts.Host {
		link := opts.Prefix + "-h"
		Sh(t, "ip", "link", "add", link, "type", "veth", "peer", "name", "ph", "netns", sw)
		t.Cleanup(func() { _ = exec.Command("ip", "link", "del", link).Run() })
		Sh(t, "ip", "-n", sw, "link", "set", "ph", "master", "br0", "up")
		Sh(t, "ip", "addr", "add", s.Addr(254)+"/24", "dev", link)
		Sh(t, "ip", "link", "set", link, "up")
	}
	return s
}

// Netns is the namespace of node (or Client).
func (s *Segment) Netns(node string) string { return s.opts.Prefix + "-" + node }

// Addr is the IPv4 address of host number n.
func (s *Segment) Addr(n int) string { return fmt.Sprintf("%s.%d", s.opts.Net, n) }

// Addr6 is the IPv6 address of host number n: fd<2nd octet>:<3rd octet>::<n>
// (10.99.0 → fd99::n).
func (s *Segment) Addr6(n int) string {
	o := strings.Split(s.opts.Net, ".")
	return netip.MustParseAddr(fmt.Sprintf("fd%s:%s::%x", o[1], o[2], n)).String()
}

// NodeAddr is node's IPv4 address.
func (s *Segment) NodeAddr(node string) string {
	for i, n := range s.opts.Nodes {
		if n == node {
			return s.Addr(i + 1)
		}
	}
	panic("no node " + node)
}

// HostAddr is the host's address on the segment (Options.Host).
func (s *Segment) HostAddr() string { return s.Addr(254) }

// serve installs node's (empty) DNAT chain and its name server.
func (s *Segment) serve(t testing.TB, node string) {
	ns := s.Netns(node)
	rules := "table inet l2seg {\n chain pre {\n  type nat hook prerouting priority dstnat;\n }\n}\n"
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft in %s: %v\n%s", ns, err, out)
	}
	l, err := localcloud.Listen(ns, "tcp", ":8080")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, node)
			c.Close()
		}
	}()
}

// AddVIPs makes every node take port 80 of vips to its own port 8080.
func (s *Segment) AddVIPs(t testing.TB, vips ...string) {
	t.Helper()
	for i, node := range s.opts.Nodes {
		for _, v := range vips {
			fam, to := "ip", s.Addr(i+1)+":8080"
			if strings.Contains(v, ":") {
				fam, to = "ip6", "["+s.Addr6(i+1)+"]:8080"
			}
			Sh(t, "ip", "netns", "exec", s.Netns(node), "nft", "add", "rule", "inet", "l2seg", "pre",
				fam, "daddr", v, "tcp", "dport", "80", "dnat", fam, "to", to)
		}
	}
}

// Ask connects from the client to vip:80 and returns the node that
// answered, within timeout.
func (s *Segment) Ask(vip string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := localcloud.Dial(ctx, s.Netns(Client), "tcp", net.JoinHostPort(vip, "80"))
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// Neighbours is the client's neighbour table.
func (s *Segment) Neighbours(t testing.TB) string {
	return Sh(t, "ip", "-n", s.Netns(Client), "neigh")
}
