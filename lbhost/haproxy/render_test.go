package haproxy

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func sample() Frontend {
	return Frontend{
		Name:    "c1_lb-a",
		Address: "10.252.0.7",
		Ports:   []Port{{Port: 80, NodePort: 30080}, {Port: 443, NodePort: 30443}},
		Backends: []Backend{
			{Name: "node-a", Address: "10.250.0.11"},
			{Name: "node-b", Address: "10.250.0.12"},
		},
		HealthCheck:     HealthCheck{Protocol: "HTTP", Port: 10256, Path: "/healthz", Interval: "1s", Rise: 2, Fall: 2},
		SourceRanges:    []string{"10.0.0.0/8", "192.168.1.0/24"},
		ProxyProtocol:   "v2",
		SessionAffinity: "ClientIP",
		Timeouts:        Timeouts{Connect: "5s", Client: "60s", Server: "60s"},
	}
}

func TestRenderGolden(t *testing.T) {
	got, err := Render(sample())
	if err != nil {
		t.Fatal(err)
	}
	want := `# managed by terraform-provider-lbhost: load balancer c1_lb-a

frontend fe_c1_lb-a_80
    mode tcp
    bind 10.252.0.7:80
    timeout client 60s
    tcp-request connection reject unless { src 10.0.0.0/8 192.168.1.0/24 }
    default_backend be_c1_lb-a_80

backend be_c1_lb-a_80
    mode tcp
    balance source
    timeout connect 5s
    timeout server 60s
    option httpchk
    http-check send meth GET uri /healthz
    http-check expect status 200
    default-server check port 10256 inter 1s fall 2 rise 2 send-proxy-v2
    # node_port 30080
    server node-a 10.250.0.11:30080
    server node-b 10.250.0.12:30080
`
	if !strings.HasPrefix(string(got), want) {
		t.Errorf("Render:\n%s\nwant prefix:\n%s", got, want)
	}
	if !strings.Contains(string(got), "server node-b 10.250.0.12:30443\n") {
		t.Errorf("port 443 backend missing:\n%s", got)
	}
}

func TestRenderIPv6BindsInBrackets(t *testing.T) {
	f := sample()
	f.Address = "fd00:5::7"
	f.Backends = append(f.Backends, Backend{Name: "node-c", Address: "fd00:250::13"})
	got, err := Render(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"    bind [fd00:5::7]:80\n", "    server node-a 10.250.0.11:30080\n", "    server node-c [fd00:250::13]:30443\n"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("Render lacks %q:\n%s", want, got)
		}
	}
	if b := Binds(f); b[0] != "[fd00:5::7]:80" {
		t.Errorf("Binds = %v", b)
	}
}

func TestRenderParseRoundTrip(t *testing.T) {
	tcp := sample()
	tcp.HealthCheck = HealthCheck{Protocol: "TCP"}
	tcp.SourceRanges, tcp.ProxyProtocol, tcp.Timeouts = nil, "", Timeouts{}
	https := sample()
	https.HealthCheck.Protocol = "HTTPS"
	https.ProxyProtocol = "v1"
	empty := sample()
	empty.Backends = nil
	v6 := sample()
	v6.Address = "fd00:5::7"
	v6.SourceRanges = []string{"fd00::/8"}
	for name, f := range map[string]Frontend{"full": sample(), "tcp": tcp, "https": https, "no backends": empty, "ipv6 vip": v6} {
		t.Run(name, func(t *testing.T) {
			data, err := Render(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, data)
			}
			if !reflect.DeepEqual(got, f) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, f)
			}
		})
	}
}

func TestParseRejectsForeignEdits(t *testing.T) {
	data, _ := Render(sample())
	for name, edit := range map[string]func(string) string{
		"no header":         func(s string) string { return strings.Replace(s, "# managed by", "# hand made", 1) },
		"extra directive":   func(s string) string { return strings.Replace(s, "    mode tcp\n", "    mode tcp\n    maxconn 1\n", 1) },
		"truncated":         func(s string) string { return s[:len(s)/3] },
		"ports disagree":    func(s string) string { return strings.Replace(s, "server node-b 10.250.0.12:30443\n", "", 1) },
		"foreign server op": func(s string) string { return strings.Replace(s, "send-proxy-v2", "send-proxy-v2 backup", 1) },
	} {
		t.Run(name, func(t *testing.T) {
			if f, err := Parse([]byte(edit(string(data)))); err == nil {
				t.Errorf("Parse accepted an edited fragment: %+v", f)
			}
		})
	}
}

func TestValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(*Frontend)
	}{
		{"name", func(f *Frontend) { f.Name = "bad name; rm -rf /" }},
		{"address", func(f *Frontend) { f.Address = "10.0.0.1\n    bind 0.0.0.0" }},
		{"ports", func(f *Frontend) { f.Ports = nil }},
		{"ports[1].port", func(f *Frontend) { f.Ports[1].Port = 80 }},
		{"ports[0].node_port", func(f *Frontend) { f.Ports[0].NodePort = 70000 }},
		{"backends[1].name", func(f *Frontend) { f.Backends[1].Name = "Node B" }},
		{"backends[0].address", func(f *Frontend) { f.Backends[0].Address = "fd00::1%eth0" }},
		{"address", func(f *Frontend) { f.Address = "FD00::1" }}, // not canonical: Read would see drift
		{"address", func(f *Frontend) { f.Address = "::ffff:10.0.0.1" }},
		{"health_check.protocol", func(f *Frontend) { f.HealthCheck.Protocol = "UDP" }},
		{"health_check.path", func(f *Frontend) { f.HealthCheck.Path = "/x y" }},
		{"health_check.interval", func(f *Frontend) { f.HealthCheck.Interval = "1 s" }},
		{"source_ranges[0]", func(f *Frontend) { f.SourceRanges[0] = "10.0.0.0/33" }},
		{"proxy_protocol", func(f *Frontend) { f.ProxyProtocol = "v3" }},
		{"session_affinity", func(f *Frontend) { f.SessionAffinity = "Cookie" }},
		{"timeouts.server", func(f *Frontend) { f.Timeouts.Server = "5 s" }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			f := sample()
			f.Ports = append([]Port(nil), f.Ports...)
			f.Backends = append([]Backend(nil), f.Backends...)
			f.SourceRanges = append([]string(nil), f.SourceRanges...)
			tc.edit(&f)
			_, err := Render(f)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("Render error = %v, want a field error for %s", err, tc.field)
			}
		})
	}
}
