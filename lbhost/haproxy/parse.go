// Reading a fragment back into a Frontend: the header, the sections, each
// port's frontend and backend, and the server options every port shares.

package haproxy

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// section is one frontend or backend block of a fragment, its lines
// without their indentation.
type section struct {
	kind, name string
	lines      []string
}

// portConfig is what one port's frontend and backend say besides the port
// itself; Render writes the same for every port.
type portConfig struct {
	servers  []Backend
	opts     string
	hc       HealthCheck
	affinity string
	ranges   []string
	timeouts Timeouts
}

// same reports whether two ports are configured alike.
func (c portConfig) same(o portConfig) bool {
	return fmt.Sprint(c.servers) == fmt.Sprint(o.servers) && c.opts == o.opts && c.hc == o.hc &&
		c.affinity == o.affinity && strings.Join(c.ranges, " ") == strings.Join(o.ranges, " ") &&
		c.timeouts == o.timeouts
}

// Parse reads a fragment written by Render back into a Frontend. A file
// that is not exactly the shape Render produces (edited by hand, from an
// older writer, truncated) is an error: the caller treats it as drift.
func Parse(data []byte) (Frontend, error) {
	var f Frontend
	name, secs, err := splitSections(data)
	f.Name = name
	if err != nil {
		return f, err
	}
	var first portConfig
	for i := 0; i < len(secs); i += 2 {
		port, c, err := parsePort(&f, secs[i], secs[i+1], i)
		if err != nil {
			return f, err
		}
		if i == 0 {
			first = c
			f.HealthCheck, f.SessionAffinity, f.SourceRanges, f.Timeouts = c.hc, c.affinity, c.ranges, c.timeouts
		} else if !c.same(first) {
			return f, fmt.Errorf("port %d is configured unlike the first port", port.Port)
		}
		if port.NodePort == 0 {
			return f, fmt.Errorf("backend %s records no node port", secs[i+1].name)
		}
		f.Ports = append(f.Ports, port)
	}
	f.Backends = first.servers
	if err := f.Validate(); err != nil {
		return f, fmt.Errorf("fragment holds invalid values: %w", err)
	}
	return f, nil
}

// splitSections checks the header line and splits the rest of the fragment
// into sections, a frontend and a backend per port.
func splitSections(data []byte) (string, []*section, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), header) {
		return "", nil, fmt.Errorf("not a fragment written by lbhost (no header line)")
	}
	name := strings.TrimPrefix(sc.Text(), header)
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
			return name, nil, fmt.Errorf("unexpected line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		return name, nil, fmt.Errorf("read fragment: %w", err)
	}
	if len(secs) == 0 || len(secs)%2 != 0 {
		return name, nil, fmt.Errorf("expected a frontend and a backend per port, found %d sections", len(secs))
	}
	return name, secs, nil
}

// parsePort reads the i-th section pair, one port's frontend fe and
// backend be; the frontend's bind address becomes f.Address, the server
// options f.ProxyProtocol.
func parsePort(f *Frontend, fe, be *section, i int) (Port, portConfig, error) {
	var c portConfig
	if fe.kind != "frontend" || be.kind != "backend" {
		return Port{}, c, fmt.Errorf("section %d: expected frontend then backend", i)
	}
	port, err := parseFrontendSection(f, fe, &c)
	if err != nil {
		return port, c, err
	}
	if fe.name != FrontendName(f.Name, port.Port) || be.name != BackendName(f.Name, port.Port) {
		return port, c, fmt.Errorf("sections %s/%s do not belong to %s port %d", fe.name, be.name, f.Name, port.Port)
	}
	if err := parseBackendSection(be, &port, &c); err != nil {
		return port, c, err
	}
	if err := parseServerOptions(c.opts, &c.hc, f); err != nil {
		return port, c, fmt.Errorf("backend %s: %w", be.name, err)
	}
	return port, c, nil
}

// parseFrontendSection reads a frontend's bind (the port, and the address
// every frontend shares), its client timeout and its source ranges.
func parseFrontendSection(f *Frontend, fe *section, c *portConfig) (Port, error) {
	var port Port
	for _, l := range fe.lines {
		k := strings.Fields(l)
		switch {
		case len(k) == 0:
			return port, fmt.Errorf("frontend %s: blank indented line", fe.name)
		case l == "mode tcp":
		case len(k) == 2 && k[0] == "bind":
			host, n, ok := splitHostPort(k[1])
			if !ok {
				return port, fmt.Errorf("frontend %s: bad bind %q", fe.name, k[1])
			}
			if f.Address != "" && f.Address != host {
				return port, fmt.Errorf("frontend %s binds %s, another frontend %s", fe.name, host, f.Address)
			}
			f.Address, port.Port = host, n
		case len(k) == 3 && k[0] == "timeout" && k[1] == "client":
			c.timeouts.Client = k[2]
		case strings.HasPrefix(l, "tcp-request connection reject unless { src ") && strings.HasSuffix(l, " }"):
			c.ranges = strings.Fields(strings.TrimSuffix(strings.TrimPrefix(l, "tcp-request connection reject unless { src "), " }"))
		case len(k) == 2 && k[0] == "default_backend":
		default:
			return port, fmt.Errorf("frontend %s: unexpected line %q", fe.name, l)
		}
	}
	return port, nil
}

// parseBackendSection reads a backend's balance, timeouts, HTTP check,
// node port, server options and servers.
func parseBackendSection(be *section, port *Port, c *portConfig) error {
	for _, l := range be.lines {
		k := strings.Fields(l)
		switch {
		case len(k) == 0:
			return fmt.Errorf("backend %s: blank indented line", be.name)
		case l == "mode tcp":
		case l == "balance source":
			c.affinity = "ClientIP"
		case l == "balance roundrobin":
			c.affinity = "None"
		case len(k) == 3 && k[0] == "timeout" && k[1] == "connect":
			c.timeouts.Connect = k[2]
		case len(k) == 3 && k[0] == "timeout" && k[1] == "server":
			c.timeouts.Server = k[2]
		case l == "option httpchk", l == "http-check expect status 200":
		case len(k) == 6 && strings.HasPrefix(l, "http-check send meth GET uri "):
			c.hc.Path = k[5]
		case len(k) == 3 && k[0] == "#" && k[1] == "node_port":
			n, err := strconv.Atoi(k[2])
			if err != nil || (port.NodePort != 0 && port.NodePort != n) {
				return fmt.Errorf("backend %s: bad node_port line %q", be.name, l)
			}
			port.NodePort = n
		case k[0] == "default-server":
			c.opts = strings.Join(k[1:], " ")
		case len(k) == 3 && k[0] == "server":
			host, n, ok := splitHostPort(k[2])
			if !ok {
				return fmt.Errorf("backend %s: bad server address %q", be.name, k[2])
			}
			if port.NodePort != 0 && port.NodePort != n {
				return fmt.Errorf("backend %s: servers on different ports", be.name)
			}
			port.NodePort = n
			c.servers = append(c.servers, Backend{Name: k[1], Address: host})
		default:
			return fmt.Errorf("backend %s: unexpected line %q", be.name, l)
		}
	}
	return nil
}

// splitHostPort reads what hostPort wrote.
func splitHostPort(s string) (string, int, bool) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil || ap.String() != s {
		return "", 0, false
	}
	return ap.Addr().String(), int(ap.Port()), true
}

// parseServerOptions reads the default-server options (check, port, rise,
// fall, inter, check-ssl, PROXY protocol) into hc and f.
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
