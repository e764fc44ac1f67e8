// Rendering one load balancer's fragment from a Frontend: the header,
// a frontend and a backend per port, the servers and their options.

package haproxy

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// header is the first line of every fragment lbhost writes; Parse refuses
// anything else, so a hand-made file is never mistaken for ours.
const header = "# managed by terraform-provider-lbhost: load balancer "

// Render returns the fragment for f, or the validation error. Rendering is
// deterministic: the same Frontend always gives the same bytes.
func Render(f Frontend) ([]byte, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("%s%s", header, f.Name)
	for _, p := range f.Ports {
		w("")
		w("frontend %s", FrontendName(f.Name, p.Port))
		w("    mode tcp")
		w("    bind %s", hostPort(f.Address, p.Port))
		if f.Timeouts.Client != "" {
			w("    timeout client %s", f.Timeouts.Client)
		}
		if len(f.SourceRanges) > 0 {
			w("    tcp-request connection reject unless { src %s }", strings.Join(f.SourceRanges, " "))
		}
		w("    default_backend %s", BackendName(f.Name, p.Port))
		w("")
		w("backend %s", BackendName(f.Name, p.Port))
		w("    mode tcp")
		if f.SessionAffinity == "ClientIP" {
			w("    balance source")
		} else {
			w("    balance roundrobin")
		}
		if f.Timeouts.Connect != "" {
			w("    timeout connect %s", f.Timeouts.Connect)
		}
		if f.Timeouts.Server != "" {
			w("    timeout server %s", f.Timeouts.Server)
		}
		hc := f.HealthCheck
		if hc.Protocol == "HTTP" || hc.Protocol == "HTTPS" {
			w("    option httpchk")
			w("    http-check send meth GET uri %s", hc.Path)
			w("    http-check expect status 200")
		}
		w("    default-server %s", strings.Join(serverOptions(f), " "))
		w("    # node_port %d", p.NodePort)
		for _, s := range f.Backends {
			w("    server %s %s", s.Name, hostPort(s.Address, p.NodePort))
		}
	}
	return b.Bytes(), nil
}

// serverOptions are the default-server options: the health check and the
// PROXY protocol. Everything here decides how a server's check behaves, so
// it is also what CheckSignature compares.
func serverOptions(f Frontend) []string {
	hc := f.HealthCheck
	opts := []string{"check"}
	if hc.Port != 0 {
		opts = append(opts, "port", strconv.Itoa(hc.Port))
	}
	if hc.Interval != "" {
		opts = append(opts, "inter", hc.Interval)
	}
	if hc.Fall != 0 {
		opts = append(opts, "fall", strconv.Itoa(hc.Fall))
	}
	if hc.Rise != 0 {
		opts = append(opts, "rise", strconv.Itoa(hc.Rise))
	}
	if hc.Protocol == "HTTPS" {
		opts = append(opts, "check-ssl", "verify", "none")
	}
	switch f.ProxyProtocol {
	case "v1":
		opts = append(opts, "send-proxy")
	case "v2":
		opts = append(opts, "send-proxy-v2")
	}
	return opts
}

// CheckSignature identifies how servers of f are checked; health state of
// a server is only worth keeping while it is unchanged.
func CheckSignature(f Frontend) string {
	return strings.Join(serverOptions(f), " ") + "|" + f.HealthCheck.Protocol + "|" + f.HealthCheck.Path
}

// Binds lists the VIP:port addresses a fragment listens on.
func Binds(f Frontend) []string {
	out := make([]string, 0, len(f.Ports))
	for _, p := range f.Ports {
		out = append(out, hostPort(f.Address, p.Port))
	}
	return out
}

// hostPort is HAProxy's address:port, an IPv6 address in brackets
// ([fd00::1]:80). Addresses are validated before they get here.
func hostPort(addr string, port int) string {
	return netip.AddrPortFrom(netip.MustParseAddr(addr), uint16(port)).String()
}
