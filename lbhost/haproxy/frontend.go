// Frontend, the typed load balancer Render writes, and its validation.

package haproxy

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
)

// Frontend is one load balancer: a frontend and a backend per port, every
// backend listing every server at the port's node port.
type Frontend struct {
	// Name identifies the load balancer on the host; it names the fragment
	// file and prefixes its HAProxy proxy names.
	Name string
	// Address is the VIP the frontends bind.
	Address string
	Ports   []Port
	// Backends are the servers behind every port (a Kubernetes node each).
	Backends     []Backend
	HealthCheck  HealthCheck
	SourceRanges []string
	// ProxyProtocol is "", "v1" or "v2": the PROXY header sent to servers.
	ProxyProtocol string
	// SessionAffinity is "None" or "ClientIP" (balance source).
	SessionAffinity string
	Timeouts        Timeouts
}

// Port maps a listening port to the servers' port.
type Port struct {
	Port     int
	NodePort int
}

// Backend is one server.
type Backend struct {
	Name    string
	Address string
}

// HealthCheck is how HAProxy checks every server. Protocol "" means a
// plain TCP connect to the server's own port.
type HealthCheck struct {
	Protocol string // "", TCP, HTTP or HTTPS
	Port     int    // 0: the server's port
	Path     string // HTTP(S) only
	Interval string // HAProxy time, e.g. "1s"
	Rise     int
	Fall     int
}

// Timeouts are HAProxy times; "" leaves HAProxy's defaults section in charge.
type Timeouts struct {
	Connect string
	Client  string
	Server  string
}

var (
	reName   = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,99}$`)
	reServer = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)
	rePath   = regexp.MustCompile(`^/[A-Za-z0-9._~/%=&?-]{0,254}$`)
	reTime   = regexp.MustCompile(`^[0-9]{1,9}(us|ms|s|m|h|d)?$`)
)

// FieldError is a validation error that names the offending field the way
// the Terraform schema spells it, so a provider can attach it to the
// right attribute.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// ValidName reports whether s is usable as a load balancer name.
func ValidName(s string) bool { return reName.MatchString(s) }

// ValidServerName reports whether s is usable as a server (node) name.
func ValidServerName(s string) bool { return reServer.MatchString(s) }

// ValidTime reports whether s is an HAProxy time such as 500ms or 5s.
func ValidTime(s string) bool { return reTime.MatchString(s) }

// ValidPath reports whether s is a health-check path lbhost writes.
func ValidPath(s string) bool { return rePath.MatchString(s) }

// ValidIPv4 reports whether s is a canonical IPv4 address.
func ValidIPv4(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is4() && a.String() == s
}

// ValidIP reports whether s is a canonical IPv4 or IPv6 address (no zone).
func ValidIP(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Zone() == "" && !a.Is4In6() && a.String() == s
}

// ValidPrefix reports whether s is a CIDR (IPv4 or IPv6), such as
// 10.0.0.0/8 or 2001:db8::/32; host bits may be set, as Kubernetes allows.
func ValidPrefix(s string) bool {
	_, err := netip.ParsePrefix(s)
	return err == nil
}

func validPort(p int) bool { return p >= 1 && p <= 65535 }

// Validate checks every value that Render writes into HAProxy's config.
// Nothing unvalidated ever reaches the fragment. The steps run in this
// order and the first error wins.
func (f *Frontend) Validate() error {
	if !ValidName(f.Name) {
		return fieldErr("name", "%q must be 1-100 lowercase letters, digits, '_', '.' or '-', starting with a letter or digit", f.Name)
	}
	if !ValidIP(f.Address) {
		return fieldErr("address", "%q is not an IPv4 or IPv6 address", f.Address)
	}
	for _, step := range []func() error{f.validatePorts, f.validateBackends, f.HealthCheck.validate, f.validateOptions} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// validatePorts: at least one port, each listening port once, every port
// and node port from 1 to 65535.
func (f *Frontend) validatePorts() error {
	if len(f.Ports) == 0 {
		return fieldErr("ports", "at least one port is required")
	}
	seen := map[int]bool{}
	for i, p := range f.Ports {
		if !validPort(p.Port) {
			return fieldErr(fmt.Sprintf("ports[%d].port", i), "%d is not a port from 1 to 65535", p.Port)
		}
		if !validPort(p.NodePort) {
			return fieldErr(fmt.Sprintf("ports[%d].node_port", i), "%d is not a port from 1 to 65535", p.NodePort)
		}
		if seen[p.Port] {
			return fieldErr(fmt.Sprintf("ports[%d].port", i), "port %d is listed twice", p.Port)
		}
		seen[p.Port] = true
	}
	return nil
}

// validateBackends: every server a node name and an IP address, each name
// once.
func (f *Frontend) validateBackends() error {
	names := map[string]bool{}
	for i, b := range f.Backends {
		if !ValidServerName(b.Name) {
			return fieldErr(fmt.Sprintf("backends[%d].name", i), "%q is not a node name (lowercase letters, digits, '.', '-')", b.Name)
		}
		if !ValidIP(b.Address) {
			return fieldErr(fmt.Sprintf("backends[%d].address", i), "%q is not an IPv4 or IPv6 address", b.Address)
		}
		if names[b.Name] {
			return fieldErr(fmt.Sprintf("backends[%d].name", i), "%q is listed twice", b.Name)
		}
		names[b.Name] = true
	}
	return nil
}

// validate checks the health check's protocol and path, port, interval,
// rise and fall.
func (hc HealthCheck) validate() error {
	switch hc.Protocol {
	case "", "TCP":
		if hc.Path != "" {
			return fieldErr("health_check.path", "a TCP health check has no path")
		}
	case "HTTP", "HTTPS":
		if !ValidPath(hc.Path) {
			return fieldErr("health_check.path", "%q is not a URL path starting with '/'", hc.Path)
		}
	default:
		return fieldErr("health_check.protocol", "%q must be TCP, HTTP or HTTPS", hc.Protocol)
	}
	if hc.Port != 0 && !validPort(hc.Port) {
		return fieldErr("health_check.port", "%d is not a port from 1 to 65535", hc.Port)
	}
	if hc.Interval != "" && !ValidTime(hc.Interval) {
		return fieldErr("health_check.interval", "%q is not an HAProxy time such as 1s or 500ms", hc.Interval)
	}
	if hc.Rise < 0 || hc.Rise > 100 {
		return fieldErr("health_check.rise", "%d must be from 1 to 100", hc.Rise)
	}
	if hc.Fall < 0 || hc.Fall > 100 {
		return fieldErr("health_check.fall", "%d must be from 1 to 100", hc.Fall)
	}
	return nil
}

// validateOptions checks the source ranges, the PROXY protocol version,
// the session affinity and the timeouts.
func (f *Frontend) validateOptions() error {
	for i, r := range f.SourceRanges {
		if !ValidPrefix(r) {
			return fieldErr(fmt.Sprintf("source_ranges[%d]", i), "%q is not a CIDR such as 10.0.0.0/8", r)
		}
	}
	switch f.ProxyProtocol {
	case "", "v1", "v2":
	default:
		return fieldErr("proxy_protocol", "%q must be v1 or v2", f.ProxyProtocol)
	}
	switch f.SessionAffinity {
	case "", "None", "ClientIP":
	default:
		return fieldErr("session_affinity", "%q must be None or ClientIP", f.SessionAffinity)
	}
	for _, t := range []struct{ field, v string }{
		{"timeouts.connect", f.Timeouts.Connect}, {"timeouts.client", f.Timeouts.Client}, {"timeouts.server", f.Timeouts.Server},
	} {
		if t.v != "" && !ValidTime(t.v) {
			return fieldErr(t.field, "%q is not an HAProxy time such as 5s or 500ms", t.v)
		}
	}
	return nil
}

// FrontendName and BackendName are the HAProxy proxy names of one port.
func FrontendName(name string, port int) string { return "fe_" + name + "_" + strconv.Itoa(port) }

// BackendName is the HAProxy backend of one port of load balancer name.
func BackendName(name string, port int) string { return "be_" + name + "_" + strconv.Itoa(port) }
