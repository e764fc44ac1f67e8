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
	"strings"
	"time"

	"github.com/tfccm/tfccm/lbhost/router"
)

// Service keeps the addresses configured in Dir local (on Interface) and
// routed while served.
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

	// Linger is how long an address stays local after its announcement
	// is gone (its route goes at once); default 5s.
	Linger time.Duration

	health map[string]map[string]*router.Health // owner -> backend -> state
	up     map[string]bool                      // owner -> announced at the last sync (for the log)
	gone   map[string]time.Time                 // prefix -> when its announcement went
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
	if s.Linger == 0 {
		s.Linger = 5 * time.Second
	}
	s.health = map[string]map[string]*router.Health{}
	s.up = map[string]bool{}
	s.gone = map[string]time.Time{}
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

// Sync makes the address of every configured load balancer local (a
// route of type local in table local: the host accepts its packets, and
// zebra sees no connected route), and the main table hold a route to it (which bgpd announces)
// exactly while it is served here (an address shared by several load
// balancers: while one of them is). An address whose file is gone loses
// its route at once and the address itself Linger later, so connections
// the routers still sent here finish.
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
	wantAddr, wantRoute := map[string]bool{}, map[string]bool{}
	for owner, c := range configs {
		ok := serves(listening, c) && s.backendsUp(ctx, owner, c)
		if ok != s.up[owner] {
			s.Log.Printf("%s %s: %s", owner, c.Address, map[bool]string{true: "announced", false: "withdrawn (frontend or every backend down)"}[ok])
		}
		s.up[owner] = ok
		wantAddr[c.prefix()] = true
		if ok {
			wantRoute[c.prefix()] = true
		}
	}
	for owner := range s.up {
		if _, ok := configs[owner]; !ok {
			s.Log.Printf("%s: withdrawn (its announcement is gone)", owner)
			delete(s.up, owner)
			delete(s.health, owner)
		}
	}
	addrs, routes, err := s.owned(ctx)
	if err != nil {
		s.Log.Printf("%v", err)
		return
	}
	// Routes first: a withdrawal never waits for anything.
	for p := range routes {
		if !wantRoute[p] {
			s.run(ctx, "ip", "route", "del", p, "dev", s.Interface, "proto", Proto)
		}
	}
	for _, p := range sorted(wantAddr) {
		if !addrs[p] {
			s.run(ctx, "ip", "route", "replace", "local", p, "dev", s.Interface, "table", "local", "proto", Proto)
		}
		delete(s.gone, p)
	}
	for _, p := range sorted(wantRoute) {
		if !routes[p] {
			s.run(ctx, "ip", "route", "replace", p, "dev", s.Interface, "proto", Proto)
		}
	}
	now := time.Now()
	for p := range addrs {
		if wantAddr[p] {
			continue
		}
		if _, ok := s.gone[p]; !ok {
			s.gone[p] = now
		}
		if now.Sub(s.gone[p]) >= s.Linger {
			s.run(ctx, "ip", "route", "del", "local", p, "dev", s.Interface, "table", "local", "proto", Proto)
			delete(s.gone, p)
		}
	}
}

func (s *Service) run(ctx context.Context, argv ...string) {
	if _, err := s.Run(ctx, argv...); err != nil {
		s.Log.Printf("%v", err)
	}
}

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
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

// owned lists the announcer's local addresses (routes of type local in
// table local) and its routes (in the main table), both of protocol
// Proto, as prefixes.
func (s *Service) owned(ctx context.Context) (addrs, routes map[string]bool, err error) {
	addrs, routes = map[string]bool{}, map[string]bool{}
	for _, q := range []struct {
		into  map[string]bool
		table string
	}{{addrs, "local"}, {routes, "main"}} {
		for _, fam := range []string{"-4", "-6"} {
			out, err := s.Run(ctx, "ip", "-j", fam, "route", "show", "table", q.table, "proto", Proto)
			if err != nil {
				return nil, nil, err
			}
			var rs []struct {
				Dst string `json:"dst"`
			}
			if err := json.Unmarshal(out, &rs); err != nil {
				return nil, nil, fmt.Errorf("ip -j %s route show table %s proto %s: %w", fam, q.table, Proto, err)
			}
			for _, r := range rs {
				p := r.Dst
				if !strings.Contains(p, "/") {
					if strings.Contains(p, ":") {
						p += "/128"
					} else {
						p += "/32"
					}
				}
				q.into[p] = true
			}
		}
	}
	return addrs, routes, nil
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
