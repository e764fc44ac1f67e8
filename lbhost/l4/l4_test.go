package l4

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/lbhost/router"
)

var check = router.Check{Protocol: "HTTP", Port: 10256, Path: "/healthz", IntervalMS: 100, Rise: 1, Fall: 1}

func dnsConfig() Config {
	return Config{Name: "kind_dns", Address: "10.252.0.7",
		Ports:    []Port{{"UDP", 53, 30053}, {"TCP", 53, 30053}},
		Backends: []Backend{{"node-b", "10.250.0.12"}, {"node-a", "10.250.0.11"}, {"node-c", "10.250.0.13"}},
		Check:    check, Affinity: AffinityNone}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"ok", func(*Config) {}, ""},
		{"name", func(c *Config) { c.Name = "Bad Name" }, "name"},
		{"address", func(c *Config) { c.Address = "2001:db8::1" }, "not an IPv4 address"},
		{"no ports", func(c *Config) { c.Ports = nil }, "at least one port"},
		{"protocol", func(c *Config) { c.Ports[0].Protocol = "ICMP" }, "TCP, UDP or SCTP"},
		{"port", func(c *Config) { c.Ports[0].NodePort = 0 }, "from 1 to 65535"},
		{"duplicate", func(c *Config) { c.Ports[1].Protocol = "UDP" }, "listed twice"},
		{"backend", func(c *Config) { c.Backends[0].Address = "10.250.0" }, "backends[0]"},
		{"backend twice", func(c *Config) { c.Backends[1].Name = "node-b" }, "unique node name"},
		{"range", func(c *Config) { c.SourceRanges = []string{"10.0.0.1/8"} }, "source_ranges[0]"},
		{"ipv6 range", func(c *Config) { c.SourceRanges = []string{"2001:db8::/32"} }, "source_ranges[0]"},
		{"affinity", func(c *Config) { c.Affinity = "Cookie" }, "session_affinity"},
		{"check", func(c *Config) { c.Check.Path = "no-slash" }, "health check path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dnsConfig()
			tc.mutate(&c)
			err := c.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRuleset pins the nft JSON of every case: spread by numgen, ClientIP
// by jhash, one backend, none (reject), source ranges, SNAT.
// (go test ./lbhost/l4 -run TestRuleset -update rewrites it.)
func TestRuleset(t *testing.T) {
	dns := dnsConfig()
	affinity := dnsConfig()
	affinity.Name, affinity.Address, affinity.Affinity, affinity.SNAT = "kind_sticky", "10.252.0.8", AffinityClientIP, true
	one := dnsConfig()
	one.Name, one.Address, one.SourceRanges = "kind_one", "10.252.0.9", []string{"192.0.2.0/24", "198.51.100.0/24"}
	none := dnsConfig()
	none.Name, none.Address = "kind_none", "10.252.0.10"
	got, err := Ruleset([]Live{
		{Config: dns, Up: dns.Backends[:2]},
		{Config: affinity, Up: affinity.Backends},
		{Config: one, Up: one.Backends[2:]},
		{Config: none},
	})
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", " "); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, filepath.Join("testdata", "ruleset.json"), pretty.Bytes())

	// Order does not matter; no load balancer removes the table only.
	again, _ := Ruleset([]Live{{Config: none}, {Config: one, Up: one.Backends[2:]}, {Config: affinity, Up: affinity.Backends}, {Config: dns, Up: dns.Backends[:2]}})
	if !bytes.Equal(got, again) {
		t.Error("Ruleset depends on the order of its input")
	}
	empty, _ := Ruleset(nil)
	if want := `{"nftables":[{"add":{"table":{"family":"ip","name":"lbhost_l4"}}},{"delete":{"table":{"family":"ip","name":"lbhost_l4"}}}]}`; string(empty) != want {
		t.Errorf("Ruleset(nil) = %s", empty)
	}
}

// fake plays nft and conntrack: it keeps the loaded table's listing.
type fake struct {
	mu      sync.Mutex
	healthy map[string]bool
	listing []byte // nil: no table
	loads   int
	cmds    []string
}

func (f *fake) run(_ context.Context, stdin []byte, argv ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch strings.Join(argv, " ") {
	case "nft -j -f -":
		f.loads++
		f.listing = listingOf(stdin)
		return nil, nil
	case strings.Join(ListArgs(), " "):
		if f.listing == nil {
			return nil, io.ErrUnexpectedEOF
		}
		return f.listing, nil
	}
	f.cmds = append(f.cmds, strings.Join(argv, " "))
	return nil, nil
}

// listingOf turns a ruleset into what `nft -j list table` would show.
func listingOf(rs []byte) []byte {
	var doc struct {
		Nftables []map[string]map[string]json.RawMessage `json:"nftables"`
	}
	_ = json.Unmarshal(rs, &doc)
	var out []any
	for _, c := range doc.Nftables {
		if r, ok := c["add"]["rule"]; ok {
			out = append(out, map[string]json.RawMessage{"rule": r})
		}
	}
	if out == nil {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"nftables": out})
	return b
}

func (f *fake) probe(_ context.Context, addr string, _ router.Check) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.healthy[addr]
}

func TestServiceFollowsHealth(t *testing.T) {
	dir := t.TempDir()
	c := dnsConfig()
	b, _ := c.Marshal()
	if err := os.WriteFile(filepath.Join(dir, c.Name+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	// A file whose name is not its load balancer's is skipped.
	if err := os.WriteFile(filepath.Join(dir, "other.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fake{healthy: map[string]bool{"10.250.0.11": true, "10.250.0.12": true}}
	s := &Service{Dir: dir, Run: f.run, Probe: f.probe, Log: log.New(io.Discard, "", 0)}
	ctx := context.Background()
	loaded := func() Loaded {
		t.Helper()
		l, err := ParseLoaded(f.listing)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	upOf := func() string { return strings.SplitN(loaded().Signatures[c.Name], " ", 2)[1] }
	// Every check is due again after interval - 50 ms.
	sync := func() { time.Sleep(60 * time.Millisecond); s.Sync(ctx) }

	sync()
	if got := upOf(); !strings.HasPrefix(got, "up=2/3:") || len(loaded().Signatures) != 1 {
		t.Fatalf("first sync loaded %v", loaded())
	}
	if got := strings.Join(loaded().Targets[c.Name], ","); got != "10.250.0.11,10.250.0.12" {
		t.Errorf("DNAT targets %s, want node-a's and node-b's", got)
	}
	if l4 := ConfigOfSignature(loaded().Signatures[c.Name]); l4 != ConfigHash(c) {
		t.Errorf("loaded config %s, want %s", l4, ConfigHash(c))
	}
	// Nothing changed: nothing is loaded again.
	sync()
	if f.loads != 1 {
		t.Errorf("%d loads, want 1", f.loads)
	}
	// node-b fails (fall 1): out at the next sync, and its UDP flows are
	// flushed from conntrack.
	f.healthy["10.250.0.12"] = false
	sync()
	if got := upOf(); !strings.HasPrefix(got, "up=1/3:") {
		t.Errorf("after node-b failed: %s", got)
	}
	if got := loaded().Targets[c.Name]; len(got) != 1 || got[0] != "10.250.0.11" {
		t.Errorf("DNAT targets after node-b failed: %v, want node-a's only", got)
	}
	if want := "conntrack -D -p udp --orig-dst 10.252.0.7 --orig-port-dst 53 --reply-src 10.250.0.12"; len(f.cmds) != 1 || f.cmds[0] != want {
		t.Errorf("commands %q, want %q", f.cmds, want)
	}
	// The table removed behind the service's back is loaded again.
	f.listing = nil
	sync()
	if f.loads != 3 || loaded().Signatures[c.Name] == "" {
		t.Errorf("the removed table was not restored (%d loads)", f.loads)
	}
	// The config removed: the table goes.
	if err := os.Remove(filepath.Join(dir, c.Name+".json")); err != nil {
		t.Fatal(err)
	}
	sync()
	if f.listing != nil {
		t.Errorf("table left: %s", f.listing)
	}
}

// TestParseLoadedTargets reads DNAT targets from nft's own listing (as
// nft 1.1 prints it: no family in the dnat statement, counters filled in):
// a map of several backends, one backend, and none (no dnat rule).
func TestParseLoadedTargets(t *testing.T) {
	listing := `{"nftables": [{"metainfo": {"version": "1.1.3", "json_schema_version": 1}},
{"table": {"family": "ip", "name": "lbhost_l4", "handle": 1}},
{"chain": {"family": "ip", "table": "lbhost_l4", "name": "lb_kind_dns", "handle": 2}},
{"rule": {"family": "ip", "table": "lbhost_l4", "chain": "lb_kind_dns", "handle": 3, "comment": "cfg=abc up=2/3:ff", "expr": [{"counter": {"packets": 0, "bytes": 0}}]}},
{"rule": {"family": "ip", "table": "lbhost_l4", "chain": "lb_kind_dns", "handle": 4, "expr": [{"match": {"op": "==", "left": {"meta": {"key": "l4proto"}}, "right": "udp"}}, {"match": {"op": "==", "left": {"payload": {"protocol": "th", "field": "dport"}}, "right": 53}}, {"dnat": {"addr": {"map": {"key": {"numgen": {"mode": "random", "mod": 2, "offset": 0}}, "data": {"set": [[0, "10.0.0.2"], [1, "10.0.0.3"]]}}}, "port": 30053}}]}},
{"rule": {"family": "ip", "table": "lbhost_l4", "chain": "lb_kind_one", "handle": 6, "comment": "cfg=def up=1/1:ee", "expr": [{"counter": {"packets": 0, "bytes": 0}}]}},
{"rule": {"family": "ip", "table": "lbhost_l4", "chain": "lb_kind_one", "handle": 7, "expr": [{"match": {"op": "==", "left": {"meta": {"key": "l4proto"}}, "right": "tcp"}}, {"dnat": {"addr": "10.0.0.4", "port": 30080}}]}},
{"rule": {"family": "ip", "table": "lbhost_l4", "chain": "lb_kind_none", "handle": 9, "comment": "cfg=123 up=0/2:00", "expr": [{"counter": {"packets": 0, "bytes": 0}}]}}]}`
	l, err := ParseLoaded([]byte(listing))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"kind_dns": "10.0.0.2,10.0.0.3", "kind_one": "10.0.0.4", "kind_none": ""} {
		if got := strings.Join(l.Targets[name], ","); got != want {
			t.Errorf("%s: targets %q, want %q", name, got, want)
		}
	}
	if len(l.Signatures) != 3 || l.Rules != 5 {
		t.Errorf("signatures %v, %d rules", l.Signatures, l.Rules)
	}
}
