// One announced address's config file and its checks.

package announce

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/tfccm/tfccm/lbhost/router"
)

// Proto is the routing protocol number of the announcer's routes, which
// marks them as its own: per configured address a local route (table
// local: the host accepts the address's packets, as if it were on the
// loopback, without a connected route zebra would prefer), and per
// announced address a /32 or /128 to the loopback in the main table,
// which bgpd redistributes (a kernel route). The local route stays while
// the load balancer is configured, so withdrawing the announcement never
// drops a connection the routers still send here.
const Proto = "201"

// Config is one load balancer's announced address (a file
// <owner>.json).
type Config struct {
	Owner   string `json:"owner"`
	Address string `json:"address"` // IPv4 or IPv6, announced as /32 or /128
	// Ports are the frontend's TCP ports on Address: the address is
	// announced only while something listens on every one of them.
	Ports []int `json:"ports"`
	// Backends are checked with Check; the address is announced only
	// while one passes (none given: not checked).
	Backends []string     `json:"backends,omitempty"`
	Check    router.Check `json:"check"`
}

var reOwner = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$`)

// Validate checks everything the announcer puts on a command line or
// connects to.
func (c Config) Validate() error {
	if !reOwner.MatchString(c.Owner) {
		return fmt.Errorf("owner %q: want letters, digits, '.', '_' and '-'", c.Owner)
	}
	a, err := netip.ParseAddr(c.Address)
	if err != nil || a.Zone() != "" || a.String() != c.Address || a.IsUnspecified() || a.IsLoopback() || a.IsMulticast() {
		return fmt.Errorf("address %q is not a unicast IPv4 or IPv6 address", c.Address)
	}
	if len(c.Ports) == 0 {
		return fmt.Errorf("ports: want the frontend's ports")
	}
	for _, p := range c.Ports {
		if p < 1 || p > 65535 {
			return fmt.Errorf("port %d: want 1-65535", p)
		}
	}
	for _, b := range c.Backends {
		if a, err := netip.ParseAddr(b); err != nil || a.String() != b {
			return fmt.Errorf("backend %q is not an IP address", b)
		}
	}
	if len(c.Backends) > 0 {
		if err := c.Check.Validate(); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	return nil
}

// Parse reads and validates one config file's content.
func Parse(b []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// prefix is the address's host route as `ip addr` takes it.
func (c Config) prefix() string {
	if netip.MustParseAddr(c.Address).Is4() {
		return c.Address + "/32"
	}
	return c.Address + "/128"
}
