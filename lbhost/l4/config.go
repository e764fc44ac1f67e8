// Config, one layer-4 load balancer as its JSON file says it.

package l4

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/tfccm/tfccm/lbhost/router"
)

// Config is one load balancer, as the provider writes it (<dir>/<name>.json).
type Config struct {
	Name     string    `json:"name"`
	Address  string    `json:"address"`
	Ports    []Port    `json:"ports"`
	Backends []Backend `json:"backends"`
	// Check is how every backend is checked (kube-proxy's /healthz, or the
	// Service's healthCheckNodePort for externalTrafficPolicy: Local).
	Check router.Check `json:"health_check"`
	// Affinity is "None" (each connection to any healthy backend) or
	// "ClientIP" (a client's connections to one backend while the
	// healthy set is unchanged).
	Affinity     string   `json:"session_affinity"`
	SourceRanges []string `json:"source_ranges,omitempty"`
	// SNAT rewrites the source of forwarded connections to Address (the
	// VIP): needed when the backends' replies would not come back through
	// this host (it is not their gateway); they go to the VIP, so to
	// whichever host holds it, and with conntrack state synced between
	// the hosts (conntrackd) a connection survives a VRRP failover. The
	// backends then see the VIP instead of the client's address.
	SNAT bool `json:"snat"`
}

// Port is one listening port and the backends' port for it.
type Port struct {
	Protocol string `json:"protocol"` // TCP, UDP or SCTP
	Port     int    `json:"port"`
	NodePort int    `json:"node_port"`
}

// Backend is one server (a Kubernetes node).
type Backend struct {
	Name    string `json:"name"`
	Address string `json:"address"`
}

// Protocols a port may use.
var Protocols = []string{"TCP", "UDP", "SCTP"}

// Affinities.
const (
	AffinityNone     = "None"
	AffinityClientIP = "ClientIP"
)

var (
	reName    = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,99}$`)
	reBackend = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)
)

// ValidName reports whether s can name a load balancer (file and chain).
func ValidName(s string) bool { return reName.MatchString(s) }

// ValidBackendName reports whether s can name a backend.
func ValidBackendName(s string) bool { return reBackend.MatchString(s) }

func ipv4(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is4() && a.String() == s
}

// Validate checks everything that goes into the ruleset or a probe.
func (c Config) Validate() error {
	if !ValidName(c.Name) {
		return fmt.Errorf("name %q must be 1-100 lowercase letters, digits, '_', '.' or '-'", c.Name)
	}
	if !ipv4(c.Address) {
		return fmt.Errorf("address %q is not an IPv4 address", c.Address)
	}
	if len(c.Ports) == 0 {
		return fmt.Errorf("at least one port is required")
	}
	seen := map[Port]bool{}
	for i, p := range c.Ports {
		switch p.Protocol {
		case "TCP", "UDP", "SCTP":
		default:
			return fmt.Errorf("ports[%d]: protocol %q must be TCP, UDP or SCTP", i, p.Protocol)
		}
		if p.Port < 1 || p.Port > 65535 || p.NodePort < 1 || p.NodePort > 65535 {
			return fmt.Errorf("ports[%d]: port and node_port must be from 1 to 65535", i)
		}
		k := Port{Protocol: p.Protocol, Port: p.Port}
		if seen[k] {
			return fmt.Errorf("ports[%d]: %d/%s is listed twice", i, p.Port, p.Protocol)
		}
		seen[k] = true
	}
	names := map[string]bool{}
	for i, b := range c.Backends {
		if !ValidBackendName(b.Name) || names[b.Name] {
			return fmt.Errorf("backends[%d]: name %q must be a unique node name", i, b.Name)
		}
		names[b.Name] = true
		if !ipv4(b.Address) {
			return fmt.Errorf("backends[%d]: address %q is not an IPv4 address", i, b.Address)
		}
	}
	for i, r := range c.SourceRanges {
		p, err := netip.ParsePrefix(r)
		if err != nil || !p.Addr().Is4() || p.Masked() != p {
			return fmt.Errorf("source_ranges[%d]: %q is not an IPv4 CIDR (address bits beyond the prefix zero)", i, r)
		}
	}
	switch c.Affinity {
	case AffinityNone, AffinityClientIP:
	default:
		return fmt.Errorf("session_affinity %q must be None or ClientIP", c.Affinity)
	}
	return c.Check.Validate()
}

// Parse decodes and validates a config file.
func Parse(b []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Marshal is the config file's content.
func (c Config) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
