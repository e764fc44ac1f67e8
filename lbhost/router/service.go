// The routed-VIP service loop: reading configs, probing next hops, syncing
// routes.

package router

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Service runs the routed VIPs configured in Dir.
type Service struct {
	// Dir holds one <owner>.json per routed VIP.
	Dir string
	// Tick is how often the configs are re-read; default 1s. Each VIP's
	// next hops are checked at its own interval.
	Tick time.Duration
	// Run runs an `ip` command; default exec.
	Run func(ctx context.Context, argv ...string) ([]byte, error)
	// Nft loads an nftables script (client-hashed VIPs); default
	// `nft -f -`.
	Nft func(ctx context.Context, script string) error
	// Probe checks one next hop; default HTTP(S) GET or TCP connect.
	Probe func(ctx context.Context, hop string, c Check) bool
	Log   *log.Logger

	health  map[string]map[string]*Health // address -> hop -> state
	applied map[string]string             // address -> key of the hops routed to
	// hopRules: next hops with a policy rule and table (client hashing);
	// nftLoaded: the script last loaded ("" = none yet, load even if empty).
	hopRules  map[string]bool
	nftLoaded string
	nftErr    string // the last nft error logged, so it is logged once
}

func (s *Service) defaults() {
	if s.Tick == 0 {
		s.Tick = time.Second
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
	if s.Nft == nil {
		s.Nft = func(ctx context.Context, script string) error {
			cmd := exec.CommandContext(ctx, "nft", "-f", "-")
			cmd.Stdin = strings.NewReader(script)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("nft -f: %w: %s", err, strings.TrimSpace(string(out)))
			}
			return nil
		}
	}
	if s.Probe == nil {
		s.Probe = Probe
	}
	if s.Log == nil {
		s.Log = log.New(os.Stderr, "lbhost-router: ", log.LstdFlags)
	}
	s.health = map[string]map[string]*Health{}
	s.applied = map[string]string{}
	s.hopRules = map[string]bool{}
}

// Serve runs until ctx ends. It first removes routes it owns that no
// config asks for (left by an earlier run).
func (s *Service) Serve(ctx context.Context) error {
	s.defaults()
	if err := s.adoptRoutes(ctx); err != nil {
		return err
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

// adoptRoutes records the routes an earlier run left (so unchanged ones
// are not rewritten, and orphaned ones are removed by the first Sync).
func (s *Service) adoptRoutes(ctx context.Context) error {
	out, err := s.Run(ctx, "ip", "-j", "-4", "route", "show", "proto", Proto)
	if err != nil {
		return err
	}
	var routes []struct {
		Dst      string `json:"dst"`
		Gateway  string `json:"gateway"`
		Nexthops []struct {
			Gateway string `json:"gateway"`
		} `json:"nexthops"`
	}
	if err := json.Unmarshal(out, &routes); err != nil {
		return fmt.Errorf("parse ip -j route: %w", err)
	}
	for _, r := range routes {
		hops := []string{}
		if r.Gateway != "" {
			hops = append(hops, r.Gateway)
		}
		for _, n := range r.Nexthops {
			hops = append(hops, n.Gateway)
		}
		s.applied[strings.TrimSuffix(r.Dst, "/32")] = key(hops)
	}
	out, err = s.Run(ctx, "ip", "-j", "-4", "rule", "show", "pref", RulePref)
	if err != nil {
		return err
	}
	var rules []struct {
		Table string `json:"table"`
	}
	if err := json.Unmarshal(out, &rules); err != nil {
		return fmt.Errorf("parse ip -j rule: %w", err)
	}
	for _, r := range rules {
		if id, err := strconv.ParseUint(r.Table, 10, 32); err == nil {
			s.hopRules[hopOfTable(uint32(id))] = true
		}
	}
	return nil
}

// Sync re-reads the configs, checks the next hops that are due and
// changes the routes whose healthy set changed.
func (s *Service) Sync(ctx context.Context) {
	if s.health == nil {
		s.defaults()
	}
	configs := s.read()
	for addr := range s.applied {
		if _, ok := configs[addr]; !ok {
			if _, err := s.Run(ctx, RouteArgs(addr, nil)...); err != nil && !strings.Contains(err.Error(), "No such process") {
				s.Log.Printf("remove route to %s: %v", addr, err)
				continue
			}
			s.Log.Printf("%s: removed (no routed VIP configured)", addr)
			delete(s.applied, addr)
			delete(s.health, addr)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for addr, c := range configs {
		hs := s.health[addr]
		if hs == nil {
			hs = map[string]*Health{}
			s.health[addr] = hs
		}
		for hop := range hs {
			if !contains(c.Nexthops, hop) {
				delete(hs, hop)
			}
		}
		interval := time.Duration(c.Check.IntervalMS) * time.Millisecond
		for _, hop := range c.Nexthops {
			h := hs[hop]
			if h == nil {
				h = &Health{}
				hs[hop] = h
			}
			if !h.Due(interval) {
				continue
			}
			wg.Add(1)
			go func(hop string, h *Health, c Config) {
				defer wg.Done()
				pctx, cancel := context.WithTimeout(ctx, min(interval, 2*time.Second))
				ok := s.Probe(pctx, hop, c.Check)
				cancel()
				mu.Lock()
				if h.Observe(ok, c.Check) {
					s.Log.Printf("%s (%s): next hop %s %s", c.Address, c.Owner, hop, map[bool]string{true: "up", false: "down"}[h.up])
				}
				mu.Unlock()
			}(hop, h, c)
		}
	}
	wg.Wait()
	for addr, c := range configs {
		up := s.upHops(addr, c)
		cur, have := s.applied[addr]
		if have && cur == key(up) || !have && len(up) == 0 {
			continue
		}
		if _, err := s.Run(ctx, RouteArgs(addr, up)...); err != nil && (len(up) > 0 || !strings.Contains(err.Error(), "No such process")) {
			s.Log.Printf("route %s via %v: %v", addr, up, err)
			continue
		}
		s.Log.Printf("%s (%s): routed to %v", addr, c.Owner, up)
		if len(up) == 0 {
			delete(s.applied, addr)
		} else {
			s.applied[addr] = key(up)
		}
	}
	s.syncClientHash(ctx, configs)
}

// upHops is addr's next hops that pass their check, in config order.
func (s *Service) upHops(addr string, c Config) []string {
	var up []string
	for _, hop := range c.Nexthops {
		if h := s.health[addr][hop]; h != nil && h.Up() {
			up = append(up, hop)
		}
	}
	return up
}

// syncClientHash keeps the policy rules, hop tables and nftables rules of
// the client-hashed VIPs. New hops' rules come first and stale ones go
// last, so a marked packet always finds its table.
func (s *Service) syncClientHash(ctx context.Context, configs map[string]Config) {
	vips := map[string][]string{}
	want := map[string]bool{}
	for addr, c := range configs {
		if c.Hash != HashClient {
			continue
		}
		up := s.upHops(addr, c)
		if len(up) < 2 {
			continue // the main table's route is the whole story
		}
		vips[addr] = up
		for _, hop := range up {
			want[hop] = true
		}
	}
	for _, hop := range slices.Sorted(maps.Keys(want)) {
		if s.hopRules[hop] {
			continue
		}
		if _, err := s.Run(ctx, HopRouteArgs(hop)...); err != nil {
			s.Log.Printf("client hashing: table of %s: %v", hop, err)
			return // retried at the next Sync
		}
		if _, err := s.Run(ctx, HopRuleArgs("add", hop)...); err != nil && !strings.Contains(err.Error(), "File exists") {
			s.Log.Printf("client hashing: rule of %s: %v", hop, err)
			return
		}
		s.hopRules[hop] = true
	}
	script := Ruleset(vips)
	if script != s.nftLoaded {
		err := s.Nft(ctx, script)
		if err != nil && len(vips) == 0 && s.nftLoaded == "" {
			// Nothing to hash by client and nothing loaded by this run:
			// without nftables there is nothing to clean up either.
			s.nftLoaded, err = script, nil
		}
		if err != nil {
			if err.Error() != s.nftErr {
				s.Log.Printf("client hashing (%d VIPs) needs nftables; their connections are hashed by flow until it works: %v", len(vips), err)
			}
			s.nftErr = err.Error()
			return
		}
		if len(vips) > 0 || strings.Contains(s.nftLoaded, "chain") {
			s.Log.Printf("client hashing: %d VIPs", len(vips))
		}
		s.nftLoaded, s.nftErr = script, ""
	}
	for _, hop := range slices.Sorted(maps.Keys(s.hopRules)) {
		if want[hop] {
			continue
		}
		if _, err := s.Run(ctx, HopRuleArgs("del", hop)...); err != nil && !strings.Contains(err.Error(), "No such file") {
			s.Log.Printf("client hashing: remove rule of %s: %v", hop, err)
			continue
		}
		if _, err := s.Run(ctx, HopFlushArgs(hop)...); err != nil && !strings.Contains(err.Error(), "does not exist") {
			s.Log.Printf("client hashing: remove table of %s: %v", hop, err)
			continue
		}
		delete(s.hopRules, hop)
	}
}

// read loads every valid config in Dir by address (a bad file is logged
// and skipped; its VIP keeps no route). Owners sharing an address each
// have a config: the lowest owner's is the address's.
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
		if o, ok := out[c.Address]; !ok || c.Owner < o.Owner {
			out[c.Address] = c
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Probe is the default health check of hop: HTTP(S) GET expecting 200, or
// a TCP connect.
func Probe(ctx context.Context, hop string, c Check) bool {
	addr := net.JoinHostPort(hop, strconv.Itoa(c.Port))
	if c.Protocol == "TCP" {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	}
	scheme := "http"
	if c.Protocol == "HTTPS" {
		scheme = "https"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+c.Path, nil)
	if err != nil {
		return false
	}
	client := &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		// Health endpoints serve self-signed certificates; the check is
		// about liveness, not identity.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
	}}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
