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
	s := &Service{Dir: dir, Run: f.run, Probe: f.probe, Log: log.New(io.Discard, "", 0)}
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
	step("ip -4 route replace 10.252.0.7/32 proto 77 nexthop via 10.250.0.11 weight 1 nexthop via 10.250.0.12 weight 1")
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
