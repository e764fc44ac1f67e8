package haproxy

import (
	"bufio"
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

// splitHostPort reads what hostPort wrote.
func splitHostPort(s string) (string, int, bool) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil || ap.String() != s {
		return "", 0, false
	}
	return ap.Addr().String(), int(ap.Port()), true
}

// Parse reads a fragment written by Render back into a Frontend. A file
// that is not exactly the shape Render produces (edited by hand, from an
// older writer, truncated) is an error: the caller treats it as drift.
func Parse(data []byte) (Frontend, error) {
	var f Frontend
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), header) {
		return f, fmt.Errorf("not a fragment written by lbhost (no header line)")
	}
	f.Name = strings.TrimPrefix(sc.Text(), header)
	type section struct {
		kind, name string
		lines      []string
	}
	var secs []*section
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "frontend ") || strings.HasPrefix(line, "backend "):
			kind, name, _ := strings.Cut(line, " ")
			secs = append(secs, &section{kind: kind, name: name})
		case strings.HasPrefix(line, "    ") && len(secs) > 0:
			secs[len(secs)-1].lines = append(secs[len(secs)-1].lines, strings.TrimPrefix(line, "    "))
		default:
			return f, fmt.Errorf("unexpected line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		return f, fmt.Errorf("read fragment: %w", err)
	}
	if len(secs) == 0 || len(secs)%2 != 0 {
		return f, fmt.Errorf("expected a frontend and a backend per port, found %d sections", len(secs))
	}
	var firstServers []Backend
	var firstOpts string
	for i := 0; i < len(secs); i += 2 {
		fe, be := secs[i], secs[i+1]
		if fe.kind != "frontend" || be.kind != "backend" {
			return f, fmt.Errorf("section %d: expected frontend then backend", i)
		}
		var port Port
		var timeoutClient string
		var ranges []string
		for _, l := range fe.lines {
			k := strings.Fields(l)
			switch {
			case len(k) == 0:
				return f, fmt.Errorf("frontend %s: blank indented line", fe.name)
			case l == "mode tcp":
			case len(k) == 2 && k[0] == "bind":
				host, n, ok := splitHostPort(k[1])
				if !ok {
					return f, fmt.Errorf("frontend %s: bad bind %q", fe.name, k[1])
				}
				if f.Address != "" && f.Address != host {
					return f, fmt.Errorf("frontend %s binds %s, another frontend %s", fe.name, host, f.Address)
				}
				f.Address, port.Port = host, n
			case len(k) == 3 && k[0] == "timeout" && k[1] == "client":
				timeoutClient = k[2]
			case strings.HasPrefix(l, "tcp-request connection reject unless { src ") && strings.HasSuffix(l, " }"):
				ranges = strings.Fields(strings.TrimSuffix(strings.TrimPrefix(l, "tcp-request connection reject unless { src "), " }"))
			case len(k) == 2 && k[0] == "default_backend":
			default:
				return f, fmt.Errorf("frontend %s: unexpected line %q", fe.name, l)
			}
		}
		if fe.name != FrontendName(f.Name, port.Port) || be.name != BackendName(f.Name, port.Port) {
			return f, fmt.Errorf("sections %s/%s do not belong to %s port %d", fe.name, be.name, f.Name, port.Port)
		}
		var servers []Backend
		var opts string
		var hc HealthCheck
		var affinity, tConnect, tServer string
		for _, l := range be.lines {
			k := strings.Fields(l)
			switch {
			case len(k) == 0:
				return f, fmt.Errorf("backend %s: blank indented line", be.name)
			case l == "mode tcp":
			case l == "balance source":
				affinity = "ClientIP"
			case l == "balance roundrobin":
				affinity = "None"
			case len(k) == 3 && k[0] == "timeout" && k[1] == "connect":
				tConnect = k[2]
			case len(k) == 3 && k[0] == "timeout" && k[1] == "server":
				tServer = k[2]
			case l == "option httpchk", l == "http-check expect status 200":
			case len(k) == 6 && strings.HasPrefix(l, "http-check send meth GET uri "):
				hc.Path = k[5]
			case len(k) == 3 && k[0] == "#" && k[1] == "node_port":
				n, err := strconv.Atoi(k[2])
				if err != nil || (port.NodePort != 0 && port.NodePort != n) {
					return f, fmt.Errorf("backend %s: bad node_port line %q", be.name, l)
				}
				port.NodePort = n
			case k[0] == "default-server":
				opts = strings.Join(k[1:], " ")
			case len(k) == 3 && k[0] == "server":
				host, n, ok := splitHostPort(k[2])
				if !ok {
					return f, fmt.Errorf("backend %s: bad server address %q", be.name, k[2])
				}
				if port.NodePort != 0 && port.NodePort != n {
					return f, fmt.Errorf("backend %s: servers on different ports", be.name)
				}
				port.NodePort = n
				servers = append(servers, Backend{Name: k[1], Address: host})
			default:
				return f, fmt.Errorf("backend %s: unexpected line %q", be.name, l)
			}
		}
		if err := parseServerOptions(opts, &hc, &f); err != nil {
			return f, fmt.Errorf("backend %s: %w", be.name, err)
		}
		if i == 0 {
			firstServers, firstOpts = servers, opts
			f.HealthCheck, f.SessionAffinity, f.SourceRanges = hc, affinity, ranges
			f.Timeouts = Timeouts{Connect: tConnect, Client: timeoutClient, Server: tServer}
		} else {
			if fmt.Sprint(servers) != fmt.Sprint(firstServers) || opts != firstOpts || hc != f.HealthCheck ||
				affinity != f.SessionAffinity || strings.Join(ranges, " ") != strings.Join(f.SourceRanges, " ") ||
				(Timeouts{Connect: tConnect, Client: timeoutClient, Server: tServer}) != f.Timeouts {
				return f, fmt.Errorf("port %d is configured unlike the first port", port.Port)
			}
		}
		if port.NodePort == 0 {
			return f, fmt.Errorf("backend %s records no node port", be.name)
		}
		f.Ports = append(f.Ports, port)
	}
	f.Backends = firstServers
	if err := f.Validate(); err != nil {
		return f, fmt.Errorf("fragment holds invalid values: %w", err)
	}
	return f, nil
}

func parseServerOptions(opts string, hc *HealthCheck, f *Frontend) error {
	k := strings.Fields(opts)
	if len(k) == 0 || k[0] != "check" {
		return fmt.Errorf("default-server without check: %q", opts)
	}
	proto := "TCP"
	if hc.Path != "" {
		proto = "HTTP"
	}
	for i := 1; i < len(k); i++ {
		next := func() (string, error) {
			if i+1 >= len(k) {
				return "", fmt.Errorf("option %s without a value", k[i])
			}
			i++
			return k[i], nil
		}
		var err error
		var v string
		switch k[i] {
		case "port", "fall", "rise":
			name := k[i]
			if v, err = next(); err != nil {
				return err
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s %q is not a number", name, v)
			}
			switch name {
			case "port":
				hc.Port = n
			case "fall":
				hc.Fall = n
			case "rise":
				hc.Rise = n
			}
		case "inter":
			if hc.Interval, err = next(); err != nil {
				return err
			}
		case "check-ssl":
			proto = "HTTPS"
		case "verify":
			if v, err = next(); err != nil || v != "none" {
				return fmt.Errorf("unexpected verify option")
			}
		case "send-proxy":
			f.ProxyProtocol = "v1"
		case "send-proxy-v2":
			f.ProxyProtocol = "v2"
		default:
			return fmt.Errorf("unexpected server option %q", k[i])
		}
	}
	if proto == "HTTPS" && hc.Path == "" {
		return fmt.Errorf("check-ssl without an HTTP check")
	}
	hc.Protocol = proto
	return nil
}
