// A routed VIP's Config and Check as its JSON file says them, a next hop's Health, and the route's arguments.

package router

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Proto marks the kernel routes the router owns (`ip route ... proto 77`).
const Proto = "77"

// Config is one routed VIP, as the provider writes it (<dir>/<owner>.json).
type Config struct {
	Owner    string   `json:"owner"`
	Address  string   `json:"address"`
	Nexthops []string `json:"nexthops"`
	Check    Check    `json:"health_check"`
	// Hash is how connections are spread over the next hops: "flow"
	// (addresses and ports; "" means flow) or "client" (client address
	// only: a client's connections all reach one next hop).
	Hash string `json:"hash,omitempty"`
}

// Hash values.
const (
	HashFlow   = "flow"
	HashClient = "client"
)

// Check is the health check of every next hop.
type Check struct {
	Protocol string `json:"protocol"` // HTTP, HTTPS or TCP
	Port     int    `json:"port"`
	Path     string `json:"path,omitempty"`
	// Interval between checks, down after Fall failures, up after Rise
	// successes (a new next hop is up after its first success).
	IntervalMS int `json:"interval_ms"`
	Rise       int `json:"rise"`
	Fall       int `json:"fall"`
}

var rePath = regexp.MustCompile(`^/[A-Za-z0-9._~/%-]{0,254}$`)

// Validate checks everything the router will put on a command line or in
// a request.
func (c Config) Validate() error {
	a, err := netip.ParseAddr(c.Address)
	if err != nil || !a.Is4() || a.String() != c.Address {
		return fmt.Errorf("address %q is not an IPv4 address", c.Address)
	}
	for _, n := range c.Nexthops {
		h, err := netip.ParseAddr(n)
		if err != nil || !h.Is4() || h.String() != n {
			return fmt.Errorf("next hop %q is not an IPv4 address", n)
		}
		if _, err := hopID(n); err != nil && c.Hash == HashClient {
			return err
		}
	}
	switch c.Hash {
	case "", HashFlow, HashClient:
	default:
		return fmt.Errorf("hash %q must be flow or client", c.Hash)
	}
	return c.Check.Validate()
}

// Validate checks everything a probe puts in a request.
func (c Check) Validate() error {
	switch c.Protocol {
	case "HTTP", "HTTPS":
		if !rePath.MatchString(c.Path) {
			return fmt.Errorf("health check path %q must be an absolute URL path", c.Path)
		}
	case "TCP":
	default:
		return fmt.Errorf("health check protocol %q must be HTTP, HTTPS or TCP", c.Protocol)
	}
	if c.Port < 1 || c.Port > 65535 {
		return fmt.Errorf("health check port %d must be from 1 to 65535", c.Port)
	}
	if c.IntervalMS < 100 || c.Rise < 1 || c.Fall < 1 {
		return fmt.Errorf("health check interval_ms (>= 100), rise and fall (>= 1) are required")
	}
	return nil
}

// Parse decodes and validates a config file.
func Parse(b []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Health is one checked address's state (a next hop here, a backend of
// an lbhost_l4_frontend in package l4).
type Health struct {
	up        bool
	successes int
	failures  int
	last      time.Time
}

// Up reports whether the address passes its check.
func (h *Health) Up() bool { return h.up }

// Due reports whether the next check is due at interval.
func (h *Health) Due(interval time.Duration) bool {
	return h.last.IsZero() || time.Since(h.last) >= interval-50*time.Millisecond
}

// Observe records one check result and reports whether the state changed.
// A new address is up after its first success, down after its first
// failure.
func (h *Health) Observe(ok bool, c Check) bool {
	was := h.up
	if ok {
		h.successes++
		h.failures = 0
		if h.successes >= c.Rise || (h.last.IsZero() && !h.up) {
			h.up = true
		}
	} else {
		h.failures++
		h.successes = 0
		if h.failures >= c.Fall || h.last.IsZero() {
			h.up = false
		}
	}
	h.last = time.Now()
	return h.up != was
}

// RouteArgs is the `ip` command that makes the kernel route to address go
// to hops (ECMP when more than one), or removes it when hops is empty.
func RouteArgs(address string, hops []string) []string {
	dst := address + "/32"
	if len(hops) == 0 {
		return []string{"ip", "-4", "route", "del", dst, "proto", Proto}
	}
	hops = slices.Sorted(slices.Values(hops))
	args := []string{"ip", "-4", "route", "replace", dst, "proto", Proto}
	if len(hops) == 1 {
		return append(args, "via", hops[0])
	}
	for _, h := range hops {
		args = append(args, "nexthop", "via", h, "weight", "1")
	}
	return args
}

// key identifies a desired route: the hops it goes to.
func key(hops []string) string { return strings.Join(slices.Sorted(slices.Values(hops)), ",") }
