package announce

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

// segment is one L2 network of network namespaces: a bridge in its own
// namespace, two nodes and a client, each on a veth.
type segment struct {
	prefix string
	mac    map[string]string
}

func sh(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newSegment builds the namespaces: nodes a (.1) and b (.2) and client c
// (.10) on 10.99.0.0/24 and fd99::/64. Each node takes packets for the VIPs
// on port 80 to its own port 8080 as kube-proxy takes a load balancer IP
// (nftables DNAT in prerouting), and serves its name there.
func newSegment(t *testing.T, vips ...string) *segment {
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("needs nft")
	}
	s := &segment{prefix: fmt.Sprintf("tv%d", os.Getpid()%100000), mac: map[string]string{}}
	sw := s.prefix + "-sw"
	sh(t, "ip", "netns", "add", sw)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", sw).Run() })
	sh(t, "ip", "-n", sw, "link", "add", "br0", "type", "bridge")
	sh(t, "ip", "-n", sw, "link", "set", "br0", "up")
	for i, n := range []string{"a", "b", "c"} {
		ns := s.ns(n)
		host := []string{"1", "2", "10"}[i]
		sh(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		sh(t, "ip", "-n", sw, "link", "add", "p"+n, "type", "veth", "peer", "name", "eth0", "netns", ns)
		sh(t, "ip", "-n", sw, "link", "set", "p"+n, "master", "br0", "up")
		// No duplicate address detection: the link-local address is usable at once.
		sh(t, "ip", "netns", "exec", ns, "sh", "-c", "echo 0 > /proc/sys/net/ipv6/conf/eth0/accept_dad")
		sh(t, "ip", "-n", ns, "link", "set", "lo", "up")
		sh(t, "ip", "-n", ns, "addr", "add", "10.99.0."+host+"/24", "dev", "eth0")
		sh(t, "ip", "-n", ns, "addr", "add", "fd99::"+host+"/64", "dev", "eth0", "nodad")
		sh(t, "ip", "-n", ns, "link", "set", "eth0", "up")
		// Wait out duplicate address detection of the link-local address.
		for i := 0; i < 100 && strings.TrimSpace(sh(t, "ip", "-n", ns, "-6", "addr", "show", "dev", "eth0", "tentative")) != ""; i++ {
			time.Sleep(50 * time.Millisecond)
		}
		s.mac[n] = strings.Fields(sh(t, "ip", "-n", ns, "-br", "link", "show", "eth0"))[2]
		if n == "c" {
			continue
		}
		rules := "table inet lb {\n chain pre {\n  type nat hook prerouting priority dstnat;\n"
		for _, v := range vips {
			fam, to := "ip", "10.99.0."+host+":8080"
			if strings.Contains(v, ":") {
				fam, to = "ip6", "[fd99::"+host+"]:8080"
			}
			rules += fmt.Sprintf("  %s daddr %s tcp dport 80 dnat %s to %s\n", fam, v, fam, to)
		}
		rules += " }\n}\n"
		cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(rules)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("nft in %s: %v\n%s\n%s", ns, err, out, rules)
		}
		l, err := localcloud.Listen(ns, "tcp", ":8080")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go serveName(l, n)
	}
	return s
}

func (s *segment) ns(n string) string { return s.prefix + "-" + n }

func serveName(l net.Listener, name string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		fmt.Fprintln(c, name)
		c.Close()
	}
}

// ask connects from the client to vip:80 and returns the node that answered.
func (s *segment) ask(vip string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c, err := localcloud.Dial(ctx, s.ns("c"), "tcp", net.JoinHostPort(vip, "80"))
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(300 * time.Millisecond))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// speak runs a speaker holding vip in node n's namespace: this test
// binary in a process of its own there (TestHelperSpeaker), as an agent
// runs on its node. Killing the process is killing the agent.
func (s *segment) speak(t *testing.T, n, vip string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", s.ns(n), os.Args[0], "-test.run=^TestHelperSpeaker$")
	cmd.Env = append(os.Environ(), "TFCCM_HELPER_SPEAKER="+vip)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "holding" {
		t.Fatalf("speaker in %s: %q, %v", n, line, err)
	}
	return cmd
}

// TestHelperSpeaker is the speaker process of speak.
func TestHelperSpeaker(t *testing.T) {
	vip := os.Getenv("TFCCM_HELPER_SPEAKER")
	if vip == "" {
		t.Skip("a helper process")
	}
	a := netip.MustParseAddr(vip)
	ifi, err := Interface(a, "")
	if err != nil {
		t.Fatal(err)
	}
	sp := NewSpeaker()
	if err := sp.Hold(ifi, a); err != nil {
		t.Fatal(err)
	}
	fmt.Println("holding")
	select {}
}

// TestSpeakerMovesVIP: on one L2 segment of namespaces, the node whose
// speaker holds a VIP answers for it (ARP, NDP) and gets its traffic;
// its speaker killed and another node's started, the client's existing
// neighbour entry follows the announcement without the client asking
// again; and with no speaker left nothing answers (nothing stays behind on
// the node).
func TestSpeakerMovesVIP(t *testing.T) {
	for _, vip := range []string{"10.99.0.100", "fd99::100"} {
		t.Run(vip, func(t *testing.T) {
			s := newSegment(t, vip)
			a := s.speak(t, "a", vip)
			if got, err := s.ask(vip); got != "a" {
				t.Fatalf("held by a: answered by %q (%v)", got, err)
			}
			_ = a.Process.Kill()
			_ = a.Wait()
			start := time.Now()
			b := s.speak(t, "b", vip)
			var got string
			for time.Since(start) < 3*time.Second {
				if got, _ = s.ask(vip); got == "b" {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got != "b" {
				t.Fatalf("moved to b: still answered by %q after 3 s; client neighbours:\n%s", got, sh(t, "ip", "-n", s.ns("c"), "neigh"))
			}
			t.Logf("moved in %v (from starting b's speaker)", time.Since(start).Round(time.Millisecond))
			neigh := sh(t, "ip", "-n", s.ns("c"), "neigh", "show", vip)
			if !strings.Contains(neigh, s.mac["b"]) {
				t.Errorf("client's neighbour entry for %s: %q, want b's %s", vip, neigh, s.mac["b"])
			}

			// No speaker: nothing answers once the client's entry is gone.
			_ = b.Process.Kill()
			_ = b.Wait()
			sh(t, "ip", "-n", s.ns("c"), "neigh", "flush", "dev", "eth0")
			if got, err := s.ask(vip); err == nil {
				t.Fatalf("no speaker: answered by %q", got)
			}
		})
	}
}
