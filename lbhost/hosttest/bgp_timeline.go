// Per-request timelines of a BGP failover and a trace of what the router
// saw meanwhile: its routes and neighbours as the kernel changed them,
// the clients' SYNs with the host each was sent to, and its FRR's BFD,
// BGP and zebra events, merged on one clock.

package hosttest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tfccm/tfccm/test/localcloud"
)

// Request is one request of MeasureTimeline.
type Request struct {
	// At is when it was sent, Took how long until it was answered or
	// failed.
	At   time.Time
	Took time.Duration
	// Src and Port are the client's address and port (the port is bound
	// before the SYN, so a request that never connected has one too).
	Src  string
	Port int
	// ServedBy is the LB host that proxied it ("" when it failed).
	ServedBy string
	// Kind is what a failed request saw ("" when it succeeded).
	Kind string
}

// Window is what MeasureTimeline measured: the requests, when the action
// started and returned, and the outage they add up to (as MeasureDuring's).
type Window struct {
	Outage
	Requests          []Request
	Start, Action, To time.Time
}

// MeasureTimeline is MeasureDuring keeping every request: 20 requests per
// second, each a new connection from the next client address with a 1 s
// timeout, from one second before action until two seconds after it
// returned.
func (t *ToR) MeasureTimeline(url string, v6 bool, action func()) Window {
	byAddr := map[string]string{}
	for _, h := range t.hs.Hosts {
		byAddr[h.NodeNetAddress] = h.Name
	}
	var (
		mu   sync.Mutex
		reqs []Request
		wg   sync.WaitGroup
	)
	done := make(chan struct{})
	loop := make(chan struct{})
	w := Window{Start: time.Now()}
	go func() {
		defer close(loop)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				r := t.request(url, i, v6, time.Second, byAddr)
				mu.Lock()
				reqs = append(reqs, r)
				mu.Unlock()
			}(i)
		}
	}()
	time.Sleep(time.Second)
	w.Action = time.Now()
	action()
	time.Sleep(2 * time.Second)
	close(done)
	<-loop
	wg.Wait()
	w.To = time.Now()
	slices.SortFunc(reqs, func(a, b Request) int { return a.At.Compare(b.At) })
	w.Requests = reqs
	w.Outage = Outage{Requests: len(reqs), Errors: map[string]int{}}
	var first, last time.Time
	for _, r := range reqs {
		if r.Kind == "" {
			continue
		}
		w.Lost++
		w.Errors[r.Kind]++
		if first.IsZero() {
			first = r.At
		}
		last = r.At
	}
	if w.Lost > 0 {
		w.Span = last.Sub(first) + 50*time.Millisecond
	}
	return w
}

// request sends one GET url from client i, binding its address (and so
// its port) before connecting.
func (t *ToR) request(url string, i int, v6 bool, timeout time.Duration, byAddr map[string]string) Request {
	src := t.Clients[i%len(t.Clients)]
	if v6 {
		src = t.Clients6[i%len(t.Clients6)]
	}
	r := Request{At: time.Now(), Src: src}
	var port int
	bind := func(_, _ string, c syscall.RawConn) error {
		var berr error
		err := c.Control(func(fd uintptr) {
			ip := net.ParseIP(src)
			var sa unix.Sockaddr = &unix.SockaddrInet6{Addr: [16]byte(ip.To16())}
			if ip4 := ip.To4(); ip4 != nil {
				sa = &unix.SockaddrInet4{Addr: [4]byte(ip4)}
			}
			if berr = unix.Bind(int(fd), sa); berr != nil {
				return
			}
			switch s, _ := unix.Getsockname(int(fd)); s := s.(type) {
			case *unix.SockaddrInet4:
				port = s.Port
			case *unix.SockaddrInet6:
				port = s.Port
			}
		})
		if err != nil {
			return err
		}
		return berr
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := localcloud.InNetns(t.ClientNetns, func() error {
			var err error
			d := net.Dialer{Timeout: timeout, Control: bind}
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
	resp, err := client.Get(url)
	switch {
	case err != nil:
		r.Kind = errorKind(err, 0)
	case resp.StatusCode != http.StatusOK:
		resp.Body.Close()
		r.Kind = errorKind(nil, resp.StatusCode)
	default:
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r.ServedBy = byAddr[string(b)]
		if r.ServedBy == "" {
			r.ServedBy = "?" + string(b)
		}
	}
	r.Took, r.Port = time.Since(r.At), port
	return r
}

// Trace records what the router sees while it runs: `ip monitor route
// neigh` in its namespace, the clients' SYNs and every ARP and ICMP
// packet on its link to the hosts (tcpdump), and its FRR's BFD peer, BGP
// neighbour and zebra events (debug logging, timestamps in ms).
type Trace struct {
	t    *ToR
	dir  string
	cmds []*exec.Cmd
	// hostByMAC names the hosts by their eth0's MAC address.
	hostByMAC map[string]string
}

// StartTrace starts tracing the router into dir.
func (t *ToR) StartTrace(dir string) (*Trace, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tr := &Trace{t: t, dir: dir, hostByMAC: map[string]string{}}
	for _, h := range t.hs.Hosts {
		out, err := exec.Command("ip", "-n", h.Netns, "-j", "link", "show", "eth0").Output()
		if err != nil {
			return nil, fmt.Errorf("trace: %s's MAC: %w", h.Name, err)
		}
		var links []struct {
			Address string `json:"address"`
		}
		if err := json.Unmarshal(out, &links); err != nil || len(links) == 0 {
			return nil, fmt.Errorf("trace: %s's MAC: %v", h.Name, err)
		}
		tr.hostByMAC[links[0].Address] = h.Name
	}
	for name, argv := range map[string][]string{
		"monitor.log": {"ip", "-ts", "monitor", "route", "neigh"},
		"eth0.log": {"tcpdump", "-i", "eth0", "-l", "-n", "-e", "-tt", "-U",
			"(tcp[tcpflags] & tcp-syn != 0 and tcp[tcpflags] & tcp-ack == 0) or arp or icmp or icmp6 or udp port 3784"},
	} {
		cmd, err := start(t.Netns, filepath.Join(dir, name), argv...)
		if err != nil {
			tr.Stop()
			return nil, fmt.Errorf("trace: %w", err)
		}
		tr.cmds = append(tr.cmds, cmd)
	}
	if err := run("vtysh", "-N", t.Netns, "-c", "configure terminal", "-c", "log timestamp precision 3",
		"-c", "debug bfd peer", "-c", "debug bfd zebra", "-c", "debug bgp neighbor-events", "-c", "debug bgp zebra",
		"-c", "debug bgp bfd", "-c", "debug zebra rib", "-c", "debug zebra nexthop"); err != nil {
		tr.Stop()
		return nil, fmt.Errorf("trace: %w", err)
	}
	return tr, nil
}

// Stop stops the trace's monitors.
func (tr *Trace) Stop() {
	for _, c := range tr.cmds {
		stop(c, syscall.SIGTERM)
	}
	tr.cmds = nil
}

// Snapshot is the router's state now: its BFD peers (with their timers),
// neighbour table and route to vip.
func (tr *Trace) Snapshot(vip string) string {
	var b strings.Builder
	for _, c := range [][]string{
		{"vtysh", "-N", tr.t.Netns, "-c", "show bfd peers"},
		{"ip", "-n", tr.t.Netns, "neigh", "show", "dev", "eth0"},
		{"ip", "-n", tr.t.Netns, "route", "show", vip},
		{"ip", "-n", tr.t.Netns, "nexthop", "show"},
	} {
		out, err := exec.Command(c[0], c[1:]...).CombinedOutput()
		fmt.Fprintf(&b, "$ %s (%s)\n%s", strings.Join(c, " "), time.Now().Format("15:04:05.000"), out)
		if err != nil {
			fmt.Fprintf(&b, "(%v)\n", err)
		}
	}
	return b.String()
}

// Mark is a moment of a run worth a line of its timeline.
type Mark struct {
	At   time.Time
	What string
}

// event is one line of a timeline.
type event struct {
	at   time.Time
	what string
}

var (
	frrTime     = regexp.MustCompile(`^(\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?) (.*)$`)
	monitorTime = regexp.MustCompile(`^\[(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+)\] (.*)$`)
	pcapLine    = regexp.MustCompile(`^(\d+)\.(\d+) (\S+) > (\S+), (.*)$`)
	synLine     = regexp.MustCompile(`(\S+)\.(\d+) > \S+: Flags \[S\]`)
	bfdLine     = regexp.MustCompile(`: (\S+)\.\d+ > (\S+)\.3784: BFDv1.*State (\w+)`)
)

// WriteTimeline writes name: the window's requests (each failed one with
// the host its SYN went to), the marks, and the trace's events from a
// second before the window to its end, in time order, in ms from the
// action; then the snapshots before and after.
func (tr *Trace) WriteTimeline(name string, w Window, marks []Mark, before, after string) error {
	from, to := w.Start.Add(-time.Second), w.To
	var evs []event
	add := func(at time.Time, what string) {
		if !at.Before(from) && !at.After(to) {
			evs = append(evs, event{at, what})
		}
	}
	// SYNs: client address and port → the hosts they were sent to (a
	// retransmitted SYN may go elsewhere after a route change).
	sentTo := map[string][]string{}
	for key, ss := range tr.syns(from, to) {
		for _, s := range ss {
			sentTo[key] = append(sentTo[key], fmt.Sprintf("%s@%+.0fms", s.what, s.at.Sub(w.Action).Seconds()*1000))
		}
	}
	// BFD packets: only those whose state differs from the previous one
	// between the same two addresses (FRR logs whole seconds).
	bfdState := map[string]string{}
	readLines(filepath.Join(tr.dir, "eth0.log"), func(line string) {
		m := pcapLine.FindStringSubmatch(line)
		if m == nil || synLine.MatchString(m[5]) {
			return
		}
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		usec, _ := strconv.ParseInt(m[2], 10, 64)
		if b := bfdLine.FindStringSubmatch(m[5]); b != nil {
			pair := b[1] + " > " + b[2]
			if bfdState[pair] == b[3] {
				return
			}
			bfdState[pair] = b[3]
			add(time.Unix(sec, usec*1000), fmt.Sprintf("BFD-PKT %s state %s", pair, b[3]))
			return
		}
		src, dst := m[3], m[4]
		if h := tr.hostByMAC[src]; h != "" {
			src = h
		}
		if h := tr.hostByMAC[dst]; h != "" {
			dst = h
		}
		add(time.Unix(sec, usec*1000), fmt.Sprintf("PKT     %s > %s %s", src, dst, m[5]))
	})
	readLines(filepath.Join(tr.dir, "monitor.log"), func(line string) {
		if m := monitorTime.FindStringSubmatch(line); m != nil {
			if at, err := time.ParseInLocation("2006-01-02T15:04:05.999999", m[1], time.Local); err == nil {
				add(at, "KERNEL  "+m[2])
			}
		}
	})
	for _, d := range []string{"bfdd", "bgpd", "zebra"} {
		readLines(filepath.Join(tr.t.dir, d+".log"), func(line string) {
			if m := frrTime.FindStringSubmatch(line); m != nil {
				if at, err := time.ParseInLocation("2006/01/02 15:04:05.999", m[1], time.Local); err == nil {
					add(at, fmt.Sprintf("%-7s %s", strings.ToUpper(d), m[2]))
				}
			}
		})
	}
	for _, m := range marks {
		add(m.At, "MARK    "+m.What)
	}
	for _, r := range w.Requests {
		key := fmt.Sprintf("%s:%d", r.Src, r.Port)
		what := "ok by " + r.ServedBy
		if r.Kind != "" {
			what = "LOST " + r.Kind
		}
		add(r.At, fmt.Sprintf("REQ     %-22s %-22s took %4dms  SYN to %s", key, what, r.Took.Milliseconds(), strings.Join(sentTo[key], ",")))
	}
	slices.SortStableFunc(evs, func(a, b event) int { return a.at.Compare(b.at) })
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s; action at %s\n\n", name, w.Outage, w.Action.Format("15:04:05.000"))
	for _, e := range evs {
		fmt.Fprintf(&b, "%+8.1f  %s\n", e.at.Sub(w.Action).Seconds()*1000, e.what)
	}
	fmt.Fprintf(&b, "\n== before\n%s\n== after\n%s", before, after)
	return os.WriteFile(filepath.Join(tr.dir, name+".txt"), []byte(b.String()), 0o644)
}

func readLines(path string, fn func(string)) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fn(sc.Text())
	}
}

// syns are the clients' SYNs the router sent on between from and to:
// client address:port → when, to which host (its MAC for another).
func (tr *Trace) syns(from, to time.Time) map[string][]event {
	out := map[string][]event{}
	readLines(filepath.Join(tr.dir, "eth0.log"), func(line string) {
		m := pcapLine.FindStringSubmatch(line)
		if m == nil {
			return
		}
		s := synLine.FindStringSubmatch(m[5])
		if s == nil {
			return
		}
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		usec, _ := strconv.ParseInt(m[2], 10, 64)
		at := time.Unix(sec, usec*1000)
		if at.Before(from) || at.After(to) {
			return
		}
		host := tr.hostByMAC[m[4]]
		if host == "" {
			host = m[4]
		}
		key := s[1] + ":" + s[2]
		out[key] = append(out[key], event{at, host})
	})
	return out
}

// LostByHost counts the window's lost requests by the host their first
// SYN was sent to, "?" for those the trace did not see.
func (tr *Trace) LostByHost(w Window) map[string]int {
	syns := tr.syns(w.Start.Add(-time.Second), w.To)
	out := map[string]int{}
	for _, r := range w.Requests {
		if r.Kind == "" {
			continue
		}
		h := "?"
		if ss := syns[fmt.Sprintf("%s:%d", r.Src, r.Port)]; len(ss) > 0 {
			h = ss[0].what
		}
		out[h]++
	}
	return out
}
