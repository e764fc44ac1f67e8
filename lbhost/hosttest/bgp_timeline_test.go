package hosttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTraceTimeline reads a router trace as tcpdump, ip monitor and FRR
// write it: each request gets the hosts its SYNs were sent to, lost
// requests are counted by the host of their first SYN, BFD packets
// appear once per state change, and nothing outside the window shows.
func TestTraceTimeline(t *testing.T) {
	dir := t.TempDir()
	action := time.Date(2026, 12, 3, 4, 42, 38, 0, time.Local)
	unix := func(ms int) string {
		at := action.Add(time.Duration(ms) * time.Millisecond)
		return fmt.Sprintf("%d.%06d", at.Unix(), at.Nanosecond()/1000)
	}
	const (
		tor = "d2:92:a5:3b:13:06"
		a   = "6e:fc:11:95:50:1e"
		b   = "2e:27:6f:76:95:32"
	)
	syn := func(ms int, mac, src string) string {
		return unix(ms) + " " + tor + " > " + mac + ", ethertype IPv4 (0x0800), length 74: " + src + " > 198.51.100.98.80: Flags [S], seq 1, win 64240, length 0"
	}
	bfd := func(ms int, from, to, state string) string {
		return unix(ms) + " " + tor + " > " + a + ", ethertype IPv4 (0x0800), length 66: " + from + ".49157 > " + to + ".3784: BFDv1, Control, State " + state + ", Flags: [none], length: 24"
	}
	pcap := []string{
		syn(-5000, a, "198.18.0.10.40000"), // before the window: not this run's
		bfd(-100, "10.252.0.126", "10.252.0.2", "Up"),
		syn(100, a, "198.18.0.11.40001"),
		bfd(200, "10.252.0.126", "10.252.0.2", "Up"),
		bfd(330, "10.252.0.126", "10.252.0.2", "Down"),
		syn(1100, b, "198.18.0.11.40001"), // the retransmitted SYN, after the route changed
		syn(1150, b, "198.18.0.12.40002"),
		unix(1200) + " " + b + " > ff:ff:ff:ff:ff:ff, ethertype ARP (0x0806), length 42: Request who-has 10.252.0.126 tell 10.252.0.3, length 28",
	}
	if err := os.WriteFile(filepath.Join(dir, "eth0.log"), []byte(strings.Join(pcap, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	monitor := "[" + action.Add(400*time.Millisecond).Format("2006-01-02T15:04:05.000000") + "] 198.51.100.98 nhid 12 via 10.252.0.3 dev eth0 proto bgp metric 20\n"
	if err := os.WriteFile(filepath.Join(dir, "monitor.log"), []byte(monitor), 0o644); err != nil {
		t.Fatal(err)
	}
	frr := action.Add(300*time.Millisecond).Format("2006/01/02 15:04:05.000") + " BFD: [SEY1D-NT8EQ] state-change: up -> down reason:control-expired\n"
	if err := os.WriteFile(filepath.Join(dir, "bfdd.log"), []byte(frr), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := &Trace{t: &ToR{dir: dir}, dir: dir, hostByMAC: map[string]string{a: "lb-a", b: "lb-b"}}
	w := Window{Start: action.Add(-time.Second), Action: action, To: action.Add(2 * time.Second), Requests: []Request{
		{At: action.Add(99 * time.Millisecond), Took: time.Second, Src: "198.18.0.11", Port: 40001, Kind: "timeout"},
		{At: action.Add(1149 * time.Millisecond), Took: time.Millisecond, Src: "198.18.0.12", Port: 40002, ServedBy: "lb-b"},
		{At: action.Add(1500 * time.Millisecond), Took: time.Second, Src: "198.18.0.13", Port: 40003, Kind: "connect timeout"},
	}}
	w.Outage = Outage{Requests: 3, Lost: 2}
	if got := tr.LostByHost(w); len(got) != 2 || got["lb-a"] != 1 || got["?"] != 1 {
		t.Errorf("LostByHost = %v, want lb-a 1 (its first SYN), ? 1 (no SYN seen)", got)
	}
	if err := tr.WriteTimeline("run", w, []Mark{{At: action, What: "lb-a link-down"}}, "BEFORE", "AFTER"); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(filepath.Join(dir, "run.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		"    +0.0  MARK    lb-a link-down\n",
		"+99.0  REQ     198.18.0.11:40001      LOST timeout           took 1000ms  SYN to lb-a@+100ms,lb-b@+1100ms\n",
		"+1149.0  REQ     198.18.0.12:40002      ok by lb-b             took    1ms  SYN to lb-b@+1150ms\n",
		"SYN to \n",
		"-100.0  BFD-PKT 10.252.0.126 > 10.252.0.2 state Up\n",
		"+330.0  BFD-PKT 10.252.0.126 > 10.252.0.2 state Down\n",
		"+300.0  BFDD    BFD: [SEY1D-NT8EQ] state-change",
		"+400.0  KERNEL  198.51.100.98 nhid 12 via 10.252.0.3",
		"+1200.0  PKT     lb-b > ff:ff:ff:ff:ff:ff ethertype ARP",
		"== before\nBEFORE\n== after\nAFTER",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("timeline lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "+200.0  BFD-PKT") || strings.Contains(got, "40000") {
		t.Errorf("timeline has an unchanged BFD state or a SYN from before the window:\n%s", got)
	}
}
