package announce

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/test/l2seg"
)

// speak runs a speaker holding vip in node n's namespace: this test
// binary in a process of its own there (TestHelperSpeaker), as an agent
// runs on its node. Killing the process is killing the agent.
func speak(t *testing.T, s *l2seg.Segment, n, vip string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", s.Netns(n), os.Args[0], "-test.run=^TestHelperSpeaker$")
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
	// As the agent's reconcile: Hold again every round.
	for range time.Tick(500 * time.Millisecond) {
		if err := sp.Hold(ifi, a); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSpeakerReannounces: a holder whose neighbours were pointed at
// another node (which held the address for a moment, then let go, while
// the holder never changed) announces the address again within
// ReannounceEvery, so the client's existing entry follows the holder
// again without asking.
func TestSpeakerReannounces(t *testing.T) {
	for _, vip := range []string{"10.98.0.100", "fd98::100"} {
		t.Run(vip, func(t *testing.T) {
			s := l2seg.New(t, l2seg.Options{Prefix: fmt.Sprintf("tr%d", os.Getpid()%100000), Net: "10.98.0", Nodes: []string{"a", "b"}, VIPs: []string{vip}})
			speak(t, s, "a", vip)
			if got, err := s.Ask(vip, 300*time.Millisecond); got != "a" {
				t.Fatalf("held by a: answered by %q (%v)", got, err)
			}
			time.Sleep(1500 * time.Millisecond) // the first announcements are over
			l2seg.Sh(t, "ip", "-n", s.Netns(l2seg.Client), "neigh", "replace", vip, "lladdr", s.MACs["b"], "dev", "eth0", "nud", "stale")
			start := time.Now()
			for {
				neigh := l2seg.Sh(t, "ip", "-n", s.Netns(l2seg.Client), "neigh", "show", vip)
				if strings.Contains(neigh, s.MACs["a"]) {
					break
				}
				if time.Since(start) > ReannounceEvery+3*time.Second {
					t.Fatalf("the client's entry still %q %v after it was pointed at b: a did not announce again", neigh, time.Since(start).Round(time.Millisecond))
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Logf("the client's entry back on a %v after it was pointed at b", time.Since(start).Round(time.Millisecond))
		})
	}
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
			s := l2seg.New(t, l2seg.Options{Prefix: fmt.Sprintf("tv%d", os.Getpid()%100000), Net: "10.99.0", Nodes: []string{"a", "b"}, VIPs: []string{vip}})
			a := speak(t, s, "a", vip)
			if got, err := s.Ask(vip, 300*time.Millisecond); got != "a" {
				t.Fatalf("held by a: answered by %q (%v)", got, err)
			}
			_ = a.Process.Kill()
			_ = a.Wait()
			start := time.Now()
			b := speak(t, s, "b", vip)
			var got string
			for time.Since(start) < 3*time.Second {
				if got, _ = s.Ask(vip, 300*time.Millisecond); got == "b" {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got != "b" {
				t.Fatalf("moved to b: still answered by %q after 3 s; client neighbours:\n%s", got, s.Neighbours(t))
			}
			t.Logf("moved in %v (from starting b's speaker)", time.Since(start).Round(time.Millisecond))
			neigh := l2seg.Sh(t, "ip", "-n", s.Netns(l2seg.Client), "neigh", "show", vip)
			if !strings.Contains(neigh, s.MACs["b"]) {
				t.Errorf("client's neighbour entry for %s: %q, want b's %s", vip, neigh, s.MACs["b"])
			}

			// No speaker: nothing answers once the client's entry is gone.
			_ = b.Process.Kill()
			_ = b.Wait()
			l2seg.Sh(t, "ip", "-n", s.Netns(l2seg.Client), "neigh", "flush", "dev", "eth0")
			if got, err := s.Ask(vip, 300*time.Millisecond); err == nil {
				t.Fatalf("no speaker: answered by %q", got)
			}
		})
	}
}
