package router

import (
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
)

func TestRouteArgs(t *testing.T) {
	for _, tc := range []struct {
		hops []string
		want string
	}{
		{nil, "ip -4 route del 10.252.0.7/32 proto 77"},
		{[]string{"10.250.0.12"}, "ip -4 route replace 10.252.0.7/32 proto 77 via 10.250.0.12"},
		{[]string{"10.250.0.12", "10.250.0.11"}, "ip -4 route replace 10.252.0.7/32 proto 77 nexthop via 10.250.0.11 weight 1 nexthop via 10.250.0.12 weight 1"},
	} {
		if got := strings.Join(RouteArgs("10.252.0.7", tc.hops), " "); got != tc.want {
			t.Errorf("RouteArgs(%v) = %q, want %q", tc.hops, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	good := Config{Owner: "c_lb", Address: "10.252.0.7", Nexthops: []string{"10.250.0.11"},
		Check: Check{Protocol: "HTTP", Port: 10256, Path: "/healthz", IntervalMS: 1000, Rise: 2, Fall: 2}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Config){
		"address v6":   func(c *Config) { c.Address = "fd00::1" },
		"address text": func(c *Config) { c.Address = "10.252.0.7; reboot" },
		"next hop":     func(c *Config) { c.Nexthops = []string{"node-a"} },
		"path":         func(c *Config) { c.Check.Path = "/x y" },
		"protocol":     func(c *Config) { c.Check.Protocol = "UDP" },
		"port":         func(c *Config) { c.Check.Port = 0 },
		"interval":     func(c *Config) { c.Check.IntervalMS = 0 },
	} {
		c := good
		c.Nexthops = append([]string(nil), good.Nexthops...)
		mut(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: %+v validated", name, c)
		}
	}
}

// fake is a kernel route table and a set of healthy next hops.
type fake struct {
	mu      sync.Mutex
	healthy map[string]bool
	cmds    []string
	scripts []string
}

func (f *fake) run(_ context.Context, argv ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.Join(argv[:3], " ") == "ip -j -4" {
		return []byte("[]"), nil
	}
	f.cmds = append(f.cmds, strings.Join(argv, " "))
	return nil, nil
}

// nft records a script load as the command "nft".
func (f *fake) nft(_ context.Context, script string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cmds = append(f.cmds, "nft")
	f.scripts = append(f.scripts, script)
	return nil
}

func (f *fake) probe(_ context.Context, hop string, _ Check) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.healthy[hop]
}

func (f *fake) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.cmds
	f.cmds = nil
	return c
}

func TestSyncFollowsHealth(t *testing.T) {
	dir := t.TempDir()
	// Rise/fall 1 and a 100 ms interval: every Sync checks every hop.
	c := Config{Owner: "c_lb", Address: "10.252.0.7", Nexthops: []string{"10.250.0.11", "10.250.0.12"},
		Check: Check{Protocol: "HTTP", Port: 10256, Path: "/healthz", IntervalMS: 100, Rise: 1, Fall: 1}}
	b, _ := json.Marshal(c)
	if err := os.WriteFile(filepath.Join(dir, "c_lb.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fake{healthy: map[string]bool{"10.250.0.11": true, "10.250.0.12": true}}
	s := &Service{Dir: dir, Run: f.run, Nft: f.nft, Probe: f.probe, Log: log.New(io.Discard, "", 0)}
	ctx := context.Background()
	step := func(want ...string) {
		t.Helper()
		for _, h := range s.health {
			for _, st := range h {
				st.last = st.last.Add(-s.Tick - 1e9) // due again
			}
		}
		s.Sync(ctx)
		if got := f.take(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("commands %q, want %q", got, want)
		}
	}
	// The first Sync clears any client-hashing table an earlier run left.
	step("ip -4 route replace 10.252.0.7/32 proto 77 nexthop via 10.250.0.11 weight 1 nexthop via 10.250.0.12 weight 1", "nft")
	step() // nothing changed: no command
	f.healthy["10.250.0.11"] = false
	step("ip -4 route replace 10.252.0.7/32 proto 77 via 10.250.0.12")
	f.healthy["10.250.0.12"] = false
	step("ip -4 route del 10.252.0.7/32 proto 77")
	f.healthy["10.250.0.11"] = true
	step("ip -4 route replace 10.252.0.7/32 proto 77 via 10.250.0.11")
	if err := os.Remove(filepath.Join(dir, "c_lb.json")); err != nil {
		t.Fatal(err)
	}
	step("ip -4 route del 10.252.0.7/32 proto 77")
	step()
}

func TestRuleset(t *testing.T) {
	const clear = "table ip lbhost_router\ndelete table ip lbhost_router\n"
	for _, tc := range []struct {
		name string
		vips map[string][]string
		want string
	}{
		{"none", nil, clear},
		{"one hop needs no rule", map[string][]string{"10.252.0.7": {"10.250.0.11"}}, clear},
		{"sorted", map[string][]string{
			"10.252.0.9": {"10.250.0.12", "10.250.0.11"},
			"10.252.0.7": {"10.250.0.11", "10.250.0.12", "10.250.0.13"},
		}, clear + "table ip lbhost_router {\n\tchain prerouting {\n\t\ttype filter hook prerouting priority mangle; policy accept;\n" +
			"\t\tip daddr 10.252.0.7 ct state new meta mark set jhash ip saddr mod 3 seed 0x0 map { 0 : 0xafa000b, 1 : 0xafa000c, 2 : 0xafa000d } ct mark set meta mark\n" +
			"\t\tip daddr 10.252.0.7 ct state != new meta mark set ct mark\n" +
			"\t\tip daddr 10.252.0.9 ct state new meta mark set jhash ip saddr mod 2 seed 0x0 map { 0 : 0xafa000b, 1 : 0xafa000c } ct mark set meta mark\n" +
			"\t\tip daddr 10.252.0.9 ct state != new meta mark set ct mark\n\t}\n}\n"},
	} {
		if got := Ruleset(tc.vips); got != tc.want {
			t.Errorf("%s: Ruleset =\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
	if got, want := strings.Join(HopRuleArgs("add", "10.250.0.11"), " "), "ip -4 rule add pref 7700 fwmark 0xafa000b table 184156171"; got != want {
		t.Errorf("HopRuleArgs = %q, want %q", got, want)
	}
	if hopOfTable(184156171) != "10.250.0.11" {
		t.Errorf("hopOfTable(184156171) = %s", hopOfTable(184156171))
	}
	bad := Config{Owner: "c_lb", Address: "10.252.0.7", Nexthops: []string{"0.0.0.254"}, Hash: HashClient,
		Check: Check{Protocol: "TCP", Port: 80, IntervalMS: 1000, Rise: 1, Fall: 1}}
	if err := bad.Validate(); err == nil {
		t.Error("a client-hashed next hop whose number is a reserved table validated")
	}
	bad.Hash = "source"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "flow or client") {
		t.Errorf("hash %q: %v", bad.Hash, err)
	}
}

// TestSyncClientHash: a client-hashed VIP gets its hop tables and rules
// before the nftables script that marks packets for them, and loses them
// after; flow-hashed VIPs need neither.
func TestSyncClientHash(t *testing.T) {
	dir := t.TempDir()
	c := Config{Owner: "c_lb", Address: "10.252.0.7", Nexthops: []string{"10.250.0.11", "10.250.0.12"}, Hash: HashClient,
		Check: Check{Protocol: "TCP", Port: 80, IntervalMS: 100, Rise: 1, Fall: 1}}
	write := func(c Config) {
		t.Helper()
		b, _ := json.Marshal(c)
		if err := os.WriteFile(filepath.Join(dir, "c_lb.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(c)
	f := &fake{healthy: map[string]bool{"10.250.0.11": true, "10.250.0.12": true}}
	s := &Service{Dir: dir, Run: f.run, Nft: f.nft, Probe: f.probe, Log: log.New(io.Discard, "", 0)}
	ctx := context.Background()
	s.defaults()
	s.Run, s.Probe = f.run, f.probe
	if err := s.adoptRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	step := func(want ...string) {
		t.Helper()
		for _, h := range s.health {
			for _, st := range h {
				st.last = st.last.Add(-time.Hour)
			}
		}
		s.Sync(ctx)
		if got := f.take(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("commands\n%q\nwant\n%q", got, want)
		}
	}
	step("ip -4 route replace 10.252.0.7/32 proto 77 nexthop via 10.250.0.11 weight 1 nexthop via 10.250.0.12 weight 1",
		"ip -4 route replace default via 10.250.0.11 table 184156171 proto 77",
		"ip -4 rule add pref 7700 fwmark 0xafa000b table 184156171",
		"ip -4 route replace default via 10.250.0.12 table 184156172 proto 77",
		"ip -4 rule add pref 7700 fwmark 0xafa000c table 184156172",
		"nft")
	if last := f.scripts[len(f.scripts)-1]; !strings.Contains(last, "ip daddr 10.252.0.7 ct state new meta mark set jhash ip saddr mod 2") {
		t.Errorf("script:\n%s", last)
	}
	step() // nothing changed
	f.healthy["10.250.0.12"] = false
	step("ip -4 route replace 10.252.0.7/32 proto 77 via 10.250.0.11", "nft",
		"ip -4 rule del pref 7700 fwmark 0xafa000b table 184156171", "ip -4 route flush table 184156171",
		"ip -4 rule del pref 7700 fwmark 0xafa000c table 184156172", "ip -4 route flush table 184156172")
	if last := f.scripts[len(f.scripts)-1]; strings.Contains(last, "chain") {
		t.Errorf("one healthy hop left, script still marks:\n%s", last)
	}
	f.healthy["10.250.0.12"] = true
	c.Hash = HashFlow // the Service switched its session affinity off
	write(c)
	step("ip -4 route replace 10.252.0.7/32 proto 77 nexthop via 10.250.0.11 weight 1 nexthop via 10.250.0.12 weight 1")
}

// Owners sharing an address each have a config: the address is routed
// once, by the lowest owner's config, and stays while any config is left.
func TestSharedAddressReadOnce(t *testing.T) {
	dir := t.TempDir()
	for owner, hops := range map[string][]string{"c_b": {"10.250.0.12"}, "c_a": {"10.250.0.11"}} {
		b, _ := json.Marshal(Config{Owner: owner, Address: "10.252.0.7", Nexthops: hops,
			Check: Check{Protocol: "TCP", Port: 10256, IntervalMS: 100, Rise: 1, Fall: 1}})
		if err := os.WriteFile(filepath.Join(dir, owner+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := &Service{Dir: dir, Log: log.New(io.Discard, "", 0)}
	got := s.read()
	if len(got) != 1 || got["10.252.0.7"].Owner != "c_a" {
		t.Fatalf("read = %+v, want the one address by c_a", got)
	}
	if err := os.Remove(filepath.Join(dir, "c_a.json")); err != nil {
		t.Fatal(err)
	}
	if got := s.read(); got["10.252.0.7"].Owner != "c_b" {
		t.Fatalf("after c_a left: %+v, want c_b's", got)
	}
}
