// The layer-4 service loop: reading configs, health checks, syncing the
// table, flushing stale UDP flows.

package l4

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tfccm/tfccm/lbhost/router"
)

// Service runs the layer-4 load balancers configured in Dir.
type Service struct {
	// Dir holds one <name>.json per load balancer.
	Dir string
	// Tick is how often the configs are re-read and the table compared
	// with what should be loaded; default 1s. Each backend is checked at
	// its load balancer's interval.
	Tick time.Duration
	// Run runs nft and conntrack with stdin; default exec.
	Run func(ctx context.Context, stdin []byte, argv ...string) ([]byte, error)
	// Probe checks one backend; default router.Probe.
	Probe func(ctx context.Context, addr string, c router.Check) bool
	Log   *log.Logger

	health  map[string]*router.Health // checkKey -> state
	loaded  []byte                    // the ruleset last loaded (nil: none yet)
	wasUp   map[string]map[string]bool
	nftErr  string // the last load error logged, so it is logged once
	ctErr   bool   // conntrack's absence logged
	started bool
}

func (s *Service) defaults() {
	if s.Tick == 0 {
		s.Tick = time.Second
	}
	if s.Run == nil {
		s.Run = func(ctx context.Context, stdin []byte, argv ...string) ([]byte, error) {
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Stdin = bytes.NewReader(stdin)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				return out, fmt.Errorf("%s: %w: %s", strings.Join(argv[:min(len(argv), 3)], " "), err, strings.TrimSpace(stderr.String()))
			}
			return out, nil
		}
	}
	if s.Probe == nil {
		s.Probe = router.Probe
	}
	if s.Log == nil {
		s.Log = log.New(os.Stderr, "lbhost-router l4: ", log.LstdFlags)
	}
	s.health = map[string]*router.Health{}
	s.wasUp = map[string]map[string]bool{}
	s.started = true
}

// Serve runs until ctx ends. The table stays when it ends: connections
// keep flowing to the backends last known healthy until it runs again.
func (s *Service) Serve(ctx context.Context) error {
	if !s.started {
		s.defaults()
	}
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

// checkKey identifies one check of one address: backends shared by load
// balancers with the same check are probed once.
func checkKey(addr string, c router.Check) string {
	return fmt.Sprintf("%s|%s|%d|%s|%d|%d|%d", addr, c.Protocol, c.Port, c.Path, c.IntervalMS, c.Rise, c.Fall)
}

// Sync re-reads the configs, checks the backends that are due, and loads
// the ruleset when it changed or the loaded table differs from it.
func (s *Service) Sync(ctx context.Context) {
	if !s.started {
		s.defaults()
	}
	configs := s.read()
	s.probe(ctx, configs)
	var lbs []Live
	for _, c := range configs {
		l := Live{Config: c}
		for _, b := range c.Backends {
			if h := s.health[checkKey(b.Address, c.Check)]; h != nil && h.Up() {
				l.Up = append(l.Up, b)
			}
		}
		lbs = append(lbs, l)
	}
	rs, err := Ruleset(lbs)
	if err != nil {
		s.Log.Printf("ruleset: %v", err)
		return
	}
	if bytes.Equal(rs, s.loaded) && s.tableIntact(ctx, lbs, rs) {
		return
	}
	if s.loaded != nil && bytes.Equal(rs, s.loaded) {
		s.Log.Printf("table %s changed outside lbhost-router: loading it again", NftTable)
	}
	if _, err := s.Run(ctx, rs, "nft", "-j", "-f", "-"); err != nil {
		if err.Error() != s.nftErr {
			s.Log.Printf("load table %s: %v", NftTable, err)
		}
		s.nftErr = err.Error()
		return
	}
	s.loaded, s.nftErr = rs, ""
	for _, l := range lbs {
		s.Log.Printf("%s (%s): %d/%d backends up %v", l.Name, l.Address, len(l.Up), len(l.Backends), names(l.Up))
	}
	s.flushStaleUDP(ctx, lbs)
}

// tableIntact reports whether the loaded table is the one rs loads.
func (s *Service) tableIntact(ctx context.Context, lbs []Live, rs []byte) bool {
	if len(lbs) == 0 {
		return true // nothing of ours to keep
	}
	out, err := s.Run(ctx, nil, ListArgs()...)
	if err != nil {
		return false
	}
	got, err := ParseLoaded(out)
	return err == nil && got.Equal(Expect(lbs, rs))
}

// probe checks every backend whose check is due, in parallel.
func (s *Service) probe(ctx context.Context, configs []Config) {
	due := map[string]func(){}
	keep := map[string]bool{}
	var mu sync.Mutex
	for _, c := range configs {
		interval := time.Duration(c.Check.IntervalMS) * time.Millisecond
		for _, b := range c.Backends {
			k := checkKey(b.Address, c.Check)
			keep[k] = true
			h := s.health[k]
			if h == nil {
				h = &router.Health{}
				s.health[k] = h
			}
			if _, ok := due[k]; ok || !h.Due(interval) {
				continue
			}
			addr, check := b.Address, c.Check
			due[k] = func() {
				pctx, cancel := context.WithTimeout(ctx, min(interval, 2*time.Second))
				ok := s.Probe(pctx, addr, check)
				cancel()
				mu.Lock()
				defer mu.Unlock()
				if h.Observe(ok, check) {
					s.Log.Printf("backend %s (%s:%d): %s", addr, check.Protocol, check.Port, map[bool]string{true: "up", false: "down"}[h.Up()])
				}
			}
		}
	}
	for k := range s.health {
		if !keep[k] {
			delete(s.health, k)
		}
	}
	var wg sync.WaitGroup
	for _, f := range due {
		wg.Go(f)
	}
	wg.Wait()
}

// flushStaleUDP deletes the UDP conntrack entries of backends that left a
// load balancer's healthy set, as kube-proxy does: a UDP "connection"
// (a client reusing its source port) would otherwise stay on a backend
// that is gone until its entry times out.
func (s *Service) flushStaleUDP(ctx context.Context, lbs []Live) {
	now := map[string]map[string]bool{}
	for _, l := range lbs {
		up := map[string]bool{}
		for _, b := range l.Up {
			up[b.Address] = true
		}
		now[l.Name] = up
		if !slices.ContainsFunc(l.Ports, func(p Port) bool { return p.Protocol == "UDP" }) {
			continue
		}
		for _, addr := range slices.Sorted(maps.Keys(s.wasUp[l.Name])) {
			if up[addr] {
				continue
			}
			// Per port: Services sharing the VIP keep their own flows.
			for _, p := range l.Ports {
				if p.Protocol == "UDP" {
					s.flushUDP(ctx, l, p.Port, addr)
				}
			}
		}
	}
	s.wasUp = now
}

// flushUDP deletes the UDP conntrack entries of l's VIP:port to addr.
func (s *Service) flushUDP(ctx context.Context, l Live, port int, addr string) {
	_, err := s.Run(ctx, nil, "conntrack", "-D", "-p", "udp", "--orig-dst", l.Address, "--orig-port-dst", strconv.Itoa(port), "--reply-src", addr)
	switch {
	case err == nil, strings.Contains(err.Error(), "0 flow entries"):
	case strings.Contains(err.Error(), "executable file not found"):
		if !s.ctErr {
			s.Log.Printf("conntrack (conntrack-tools) is not installed: UDP flows to failed backends last until their conntrack entries expire")
			s.ctErr = true
		}
	default:
		s.Log.Printf("%s: flush UDP flows to %s: %v", l.Name, addr, err)
	}
}

// read loads every valid config in Dir (a bad file is logged and skipped:
// its load balancer keeps no rules).
func (s *Service) read() []Config {
	var out []Config
	files, _ := filepath.Glob(filepath.Join(s.Dir, "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		c, err := Parse(b)
		if err == nil && c.Name+".json" != filepath.Base(f) {
			err = fmt.Errorf("holds load balancer %s", strconv.Quote(c.Name))
		}
		if err != nil {
			s.Log.Printf("%s: %v", filepath.Base(f), err)
			continue
		}
		out = append(out, c)
	}
	return out
}
