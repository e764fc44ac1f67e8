// The announcer's loop: reading configs, checking frontends and backends,
// keeping the loopback's addresses.

package announce

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tfccm/tfccm/lbhost/router"
)

// Service keeps the addresses configured in Dir on Interface.
type Service struct {
	// Dir holds one <owner>.json per announced load balancer.
	Dir string
	// Interface is where announced addresses live; default "lo".
	Interface string
	// Tick is how often configs are read and frontends checked; default
	// 200ms (a failed frontend is withdrawn within one tick). Backends are
	// checked at their own interval.
	Tick time.Duration
	// Run runs an `ip` command; Listening reads the listening sockets;
	// Probe checks one backend (defaults: exec, Listeners, router.Probe).
	Run       func(ctx context.Context, argv ...string) ([]byte, error)
	Listening func() (map[netip.AddrPort]bool, error)
	Probe     func(ctx context.Context, backend string, c router.Check) bool
	Log       *log.Logger

	health map[string]map[string]*router.Health // owner -> backend -> state
	up     map[string]bool                      // owner -> announced at the last sync (for the log)
}

func (s *Service) defaults() {
	if s.Interface == "" {
		s.Interface = "lo"
	}
	if s.Tick == 0 {
		s.Tick = 200 * time.Millisecond
	}
	if s.Run == nil {
		s.Run = func(ctx context.Context, argv ...string) ([]byte, error) {
			out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
			if err != nil {
				return out, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
			}
			return out, nil
		}
	}
	if s.Listening == nil {
		s.Listening = Listeners
	}
	if s.Probe == nil {
		s.Probe = router.Probe
	}
	if s.Log == nil {
		s.Log = log.New(os.Stderr, "lbhost-router: announce: ", log.LstdFlags)
	}
	s.health = map[string]map[string]*router.Health{}
	s.up = map[string]bool{}
}

// Serve runs until ctx ends.
func (s *Service) Serve(ctx context.Context) error {
	s.defaults()
	t := time.NewTicker(s.Tick)
	defer t.Stop()
	for {
		s.Sync(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Sync makes the interface hold exactly the addresses whose load
// balancer is served here (an address shared by several load balancers:
// while one of them is).
func (s *Service) Sync(ctx context.Context) {
	if s.health == nil {
		s.defaults()
	}
	configs := s.read()
	listening, err := s.Listening()
	if err != nil {
		s.Log.Printf("reading listening sockets: %v", err)
		return // change nothing on a read error
	}
	want := map[string]bool{}
	for owner, c := range configs {
		ok := serves(listening, c) && s.backendsUp(ctx, owner, c)
		if ok != s.up[owner] {
			s.Log.Printf("%s %s: %s", owner, c.Address, map[bool]string{true: "announced", false: "withdrawn (frontend or every backend down)"}[ok])
		}
		s.up[owner] = ok
		if ok {
			want[c.prefix()] = true
		}
	}
	for owner := range s.up {
		if _, ok := configs[owner]; !ok {
			delete(s.up, owner)
			delete(s.health, owner)
		}
	}
	have, err := s.owned(ctx)
	if err != nil {
		s.Log.Printf("%v", err)
		return
	}
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range want {
			if !have[p] && !yield(p) {
				return
			}
		}
	}) {
		if _, err := s.Run(ctx, "ip", "addr", "add", p, "dev", s.Interface, "metric", strconv.Itoa(Metric)); err != nil {
			s.Log.Printf("%v", err)
		}
	}
	for p := range have {
		if !want[p] {
			if _, err := s.Run(ctx, "ip", "addr", "del", p, "dev", s.Interface); err != nil {
				s.Log.Printf("%v", err)
			}
		}
	}
}

// backendsUp checks the backends that are due and reports whether one
// is up (true when none is configured).
func (s *Service) backendsUp(ctx context.Context, owner string, c Config) bool {
	if len(c.Backends) == 0 {
		return true
	}
	hs := s.health[owner]
	if hs == nil {
		hs = map[string]*router.Health{}
		s.health[owner] = hs
	}
	interval := time.Duration(c.Check.IntervalMS) * time.Millisecond
	up := false
	for _, b := range c.Backends {
		h := hs[b]
		if h == nil {
			h = &router.Health{}
			hs[b] = h
		}
		if h.Due(interval) {
			pctx, cancel := context.WithTimeout(ctx, interval)
			h.Observe(s.Probe(pctx, b, c.Check), c.Check)
			cancel()
		}
		up = up || h.Up()
	}
	return up
}

// owned lists the interface's addresses that carry Metric, as prefixes.
func (s *Service) owned(ctx context.Context) (map[string]bool, error) {
	out, err := s.Run(ctx, "ip", "-j", "addr", "show", "dev", s.Interface)
	if err != nil {
		return nil, err
	}
	var links []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
			Metric    int    `json:"metric"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return nil, fmt.Errorf("ip -j addr show dev %s: %w", s.Interface, err)
	}
	have := map[string]bool{}
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if a.Metric == Metric {
				have[a.Local+"/"+strconv.Itoa(a.PrefixLen)] = true
			}
		}
	}
	return have, nil
}

// read loads every valid config in Dir by owner (a bad file is logged
// and skipped: its address is withdrawn).
func (s *Service) read() map[string]Config {
	out := map[string]Config{}
	files, _ := filepath.Glob(filepath.Join(s.Dir, "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		c, err := Parse(b)
		if err != nil {
			s.Log.Printf("%s: %v", filepath.Base(f), err)
			continue
		}
		out[c.Owner] = c
	}
	return out
}
