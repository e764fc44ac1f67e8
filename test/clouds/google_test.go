package clouds

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/instances"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/test/standin"
)

// gceNodes are three nodes in two zones.
func gceNodes() []*corev1.Node {
	return []*corev1.Node{
		node("node-a", "gce://shop-prod/europe-west1-b/node-a", "10.132.0.2", "", "10.244.1.0/24"),
		node("node-b", "gce://shop-prod/europe-west1-c/node-b", "10.132.0.3", "", "10.244.2.0/24"),
		node("node-c", "gce://shop-prod/europe-west1-c/node-c", "10.132.0.4", "", "10.244.3.0/24"),
	}
}

// gceEndpoints maps each zone's network endpoint group name to its instances.
func gceEndpoints(calls []standin.Call) map[string][]string {
	out := map[string][]string{}
	for _, c := range callsOf(calls, "google_compute_network_endpoints") {
		var names []string
		for _, e := range c.Values["network_endpoints"].([]any) {
			names = append(names, e.(map[string]any)["instance"].(string))
		}
		out[c.Values["network_endpoint_group"].(string)] = names
	}
	return out
}

func gceFirewalls(calls []standin.Call) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, c := range callsOf(calls, "google_compute_firewall") {
		out[strings.TrimPrefix(c.Values["name"].(string), "prod-cc888fe439-")] = c.Values
	}
	return out
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestGoogle(t *testing.T) { runCloud(t, googleCloud()) }

func googleCloud() cloud {
	return cloud{
		set:      "google",
		provider: "google",
		// The types the set and the instances fixture use (OpenTofu spends
		// a third of each command on all 249 google_compute_ types); a
		// template reaching for another type fails, as it is not served.
		only: []string{"google_compute_address", "google_compute_firewall", "google_compute_forwarding_rule",
			"google_compute_network_endpoint", "google_compute_region_backend_service",
			"google_compute_region_health_check", "google_compute_route", "google_compute_instance"},
		config: `
load_balancer {
  settings     = { region = "europe-west1", network = "k8s", subnetwork = "nodes", node_tags = ["k8s-node"] }
  service_vars = ["allow_global_access"]
}
routes {
  settings = { project = "shop-prod", network = "k8s" }
}
`,
		nodes:   gceNodes,
		fixture: map[string]map[string]any{"google_compute_address": {"address": "203.0.113.10"}},
		nodeRemoved: func(t *testing.T, calls []standin.Call) {
			if len(calls) != 1 || calls[0].Op != "update" || calls[0].Type != "google_compute_network_endpoints" {
				t.Fatalf("removing node-c: calls %+v, want one endpoints update", calls)
			}
			if got := jsonOf(gceEndpoints(calls)); got != `{"prod-cc888fe439-europe-west1-c":["node-b"]}` {
				t.Errorf("endpoints after removing node-c: %s", got)
			}
		},
		lb: []lbCase{
			{name: "basic", golden: true, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				addr := callsOf(calls, "google_compute_address")
				if len(addr) != 1 || addr[0].Values["address_type"] != "EXTERNAL" || addr[0].Values["region"] != "europe-west1" {
					t.Fatalf("address %+v", addr)
				}
				if got := jsonOf(gceEndpoints(calls)); got != `{"prod-cc888fe439-europe-west1-b":["node-a"],"prod-cc888fe439-europe-west1-c":["node-b","node-c"]}` {
					t.Errorf("endpoints %s", got)
				}
				for _, g := range callsOf(calls, "google_compute_network_endpoint_group") {
					if g.Values["network_endpoint_type"] != "GCE_VM_IP" || g.Values["subnetwork"] != "nodes" {
						t.Errorf("endpoint group %v", g.Values)
					}
				}
				hc := callsOf(calls, "google_compute_region_health_check")
				if len(hc) != 1 || jsonOf(hc[0].Values["http_health_check"]) != `[{"host":null,"port":10256,"port_name":null,"port_specification":null,"proxy_header":null,"request_path":"/healthz","response":null}]` {
					t.Errorf("health check %+v", hc)
				}
				bs := findCall(t, calls, "google_compute_region_backend_service", "protocol", "TCP")
				if bs.Values["load_balancing_scheme"] != "EXTERNAL" || len(bs.Values["backend"].([]any)) != 2 ||
					jsonOf(bs.Values["health_checks"]) != `["`+hc[0].ID+`"]` || bs.Values["session_affinity"] != "NONE" {
					t.Errorf("backend service %v", bs.Values)
				}
				fr := callsOf(calls, "google_compute_forwarding_rule")
				if len(fr) != 1 || fr[0].Values["ip_address"] != "203.0.113.10" || jsonOf(fr[0].Values["ports"]) != `["443","80"]` ||
					fr[0].Values["backend_service"] != bs.ID || fr[0].Values["ip_protocol"] != "TCP" {
					t.Errorf("forwarding rules %+v", fr)
				}
				fw := gceFirewalls(calls)
				if jsonOf(fw["clients"]["source_ranges"]) != `["0.0.0.0/0"]` || jsonOf(fw["clients"]["allow"]) != `[{"ports":["443","80"],"protocol":"tcp"}]` ||
					jsonOf(fw["clients"]["target_tags"]) != `["k8s-node"]` {
					t.Errorf("client firewall %v", fw["clients"])
				}
				if jsonOf(fw["hc"]["source_ranges"]) != `["209.85.152.0/22","209.85.204.0/22","35.191.0.0/16"]` || jsonOf(fw["hc"]["allow"]) != `[{"ports":["10256"],"protocol":"tcp"}]` {
					t.Errorf("health check firewall %v", fw["hc"])
				}
				if len(ingress) != 1 || ingress[0]["ip"] != "203.0.113.10" || ingress[0]["ip_mode"] != "VIP" {
					t.Errorf("ingress %v", ingress)
				}
			}},
			{name: "etp-local", mut: etpLocal, check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
				hc := nested(callsOf(calls, "google_compute_region_health_check")[0].Values["http_health_check"])
				if hc["port"] != json.Number("32000") || hc["request_path"] != "/healthz" {
					t.Errorf("ETP=Local health check %v", hc)
				}
				if got := jsonOf(gceFirewalls(calls)["hc"]["allow"]); got != `[{"ports":["32000"],"protocol":"tcp"}]` {
					t.Errorf("health check firewall %s", got)
				}
			}},
			{name: "source-ranges-udp", golden: true, mut: func(s *corev1.Service) {
				udp(s)
				s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			}, check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
				fr := callsOf(calls, "google_compute_forwarding_rule")
				if len(fr) != 2 || fr[0].Values["ip_address"] != fr[1].Values["ip_address"] {
					t.Fatalf("forwarding rules %+v, want TCP and UDP on one address", fr)
				}
				u := findCall(t, calls, "google_compute_forwarding_rule", "ip_protocol", "UDP")
				if jsonOf(u.Values["ports"]) != `["53"]` {
					t.Errorf("UDP rule %v", u.Values)
				}
				for _, bs := range callsOf(calls, "google_compute_region_backend_service") {
					if bs.Values["session_affinity"] != "CLIENT_IP" {
						t.Errorf("backend service %v, want CLIENT_IP affinity", bs.Values)
					}
				}
				fw := gceFirewalls(calls)["clients"]
				if jsonOf(fw["source_ranges"]) != `["192.0.2.0/24"]` || jsonOf(fw["allow"]) != `[{"ports":["443","80"],"protocol":"tcp"},{"ports":["53"],"protocol":"udp"}]` {
					t.Errorf("client firewall %v", fw)
				}
			}},
			{name: "internal-requested-ip", golden: true, mut: func(s *corev1.Service) {
				s.Annotations["tfccm.io/internal"] = "true"
				s.Annotations["tfccm.io/vars"] = `{"allow_global_access": true}`
				s.Spec.LoadBalancerIP = "10.132.0.50"
			}, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				if n := len(callsOf(calls, "google_compute_address")); n != 0 {
					t.Errorf("a requested IP still reserved %d addresses", n)
				}
				fr := callsOf(calls, "google_compute_forwarding_rule")[0].Values
				if fr["load_balancing_scheme"] != "INTERNAL" || fr["ip_address"] != "10.132.0.50" || fr["subnetwork"] != "nodes" || fr["allow_global_access"] != true {
					t.Errorf("internal forwarding rule %v", fr)
				}
				if got := jsonOf(gceFirewalls(calls)["hc"]["source_ranges"]); got != `["130.211.0.0/22","35.191.0.0/16"]` {
					t.Errorf("internal health check ranges %s", got)
				}
				if len(ingress) != 1 || ingress[0]["ip"] != "10.132.0.50" {
					t.Errorf("internal ingress %v", ingress)
				}
			}},
			// TCP and UDP rules on one requested internal IP: Google takes a
			// literal internal address on one forwarding rule only; rules share
			// it when it is a reserved address with purpose
			// SHARED_LOADBALANCER_VIP, which the set reserves.
			{name: "internal-requested-ip-tcp-udp", golden: true, mut: func(s *corev1.Service) {
				udp(s)
				s.Annotations["tfccm.io/internal"] = "true"
				s.Spec.LoadBalancerIP = "10.132.0.51"
			}, fixture: map[string]map[string]any{"google_compute_address": {"address": "10.132.0.51"}},
				check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
					addr := callsOf(calls, "google_compute_address")
					if len(addr) != 1 {
						t.Fatalf("addresses %+v, want the requested IP reserved once", addr)
					}
					a := addr[0].Values
					if a["address"] != "10.132.0.51" || a["address_type"] != "INTERNAL" || a["purpose"] != "SHARED_LOADBALANCER_VIP" || a["subnetwork"] != "nodes" {
						t.Errorf("shared internal address %v", a)
					}
					rules := callsOf(calls, "google_compute_forwarding_rule")
					if len(rules) != 2 {
						t.Fatalf("forwarding rules %+v, want TCP and UDP", rules)
					}
					for _, r := range rules {
						if r.Values["ip_address"] != "10.132.0.51" || r.Values["load_balancing_scheme"] != "INTERNAL" {
							t.Errorf("forwarding rule %v", r.Values)
						}
					}
					if len(ingress) != 1 || ingress[0]["ip"] != "10.132.0.51" {
						t.Errorf("ingress %v", ingress)
					}
				}},
			{name: "internal", mut: func(s *corev1.Service) { s.Annotations["tfccm.io/internal"] = "true" },
				fixture: map[string]map[string]any{"google_compute_address": {"address": "10.132.0.60"}},
				check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
					a := callsOf(calls, "google_compute_address")[0].Values
					if a["address_type"] != "INTERNAL" || a["purpose"] != "SHARED_LOADBALANCER_VIP" || a["subnetwork"] != "nodes" {
						t.Errorf("internal address %v", a)
					}
					if ingress[0]["ip"] != "10.132.0.60" {
						t.Errorf("internal ingress %v", ingress)
					}
				}},
			{name: "many-ports", mut: func(s *corev1.Service) {
				for i := int32(0); i < 5; i++ {
					s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "p" + string(rune('0'+i)), Protocol: corev1.ProtocolTCP, Port: 8000 + i, NodePort: 31000 + i})
				}
			}, check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
				fr := callsOf(calls, "google_compute_forwarding_rule")[0].Values
				if fr["all_ports"] != true || fr["ports"] != nil {
					t.Errorf("7 ports: forwarding rule %v, want all_ports", fr)
				}
				if n := len(nested(gceFirewalls(calls)["clients"]["allow"])["ports"].([]any)); n != 7 {
					t.Errorf("client firewall opens %d ports, want the Service's 7", n)
				}
			}},
			// A shared address (tfccm.io/allow-shared-ip) is the user's
			// reservation: the set reserves none (TestGoogleSharedAddress
			// applies two Services on one).
			{name: "shared-external", shared: "web", mut: func(s *corev1.Service) {
				s.Annotations["tfccm.io/load-balancer-ips"] = "203.0.113.77"
			}, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				if n := len(callsOf(calls, "google_compute_address")); n != 0 {
					t.Errorf("a shared address was reserved by the Service (%d addresses)", n)
				}
				if fr := callsOf(calls, "google_compute_forwarding_rule"); len(fr) != 1 || fr[0].Values["ip_address"] != "203.0.113.77" {
					t.Errorf("forwarding rules %+v, want one on the shared address", fr)
				}
				if len(ingress) != 1 || ingress[0]["ip"] != "203.0.113.77" {
					t.Errorf("ingress %v", ingress)
				}
			}},
			{name: "refuse-shared-all-ports", shared: "web", mut: func(s *corev1.Service) {
				s.Annotations["tfccm.io/load-balancer-ips"] = "203.0.113.77"
				for i := int32(0); i < 5; i++ {
					s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "p" + string(rune('0'+i)), Protocol: corev1.ProtocolTCP, Port: 8000 + i, NodePort: 31000 + i})
				}
			}, wantErr: "tfccm.io/allow-shared-ip: a forwarding rule takes up to five ports; with more (here TCP) it takes every port of its protocol on the address"},
			{name: "refuse-sctp", mut: func(s *corev1.Service) {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "sctp", Protocol: corev1.ProtocolSCTP, Port: 9999, NodePort: 30999})
			}, wantErr: "spec.ports: Google passthrough load balancers forward TCP and UDP only here; unsupported: 9999/SCTP."},
			{name: "refuse-ipv6", mut: dualStack, wantErr: "spec.ipFamilies: this set builds IPv4 load balancers only"},
			{name: "refuse-proxy-protocol", mut: func(s *corev1.Service) { s.Annotations["tfccm.io/proxy-protocol"] = "true" },
				wantErr: "tfccm.io/proxy-protocol: a passthrough load balancer does not touch packets"},
			{name: "refuse-foreign-node", nodes: func() []*corev1.Node {
				return []*corev1.Node{node("node-x", "aws:///eu-west-1a/i-0abc", "10.0.0.9", "")}
			},
				wantErr: "Nodes whose providerID is not gce://<project>/<zone>/<instance> cannot be Google load balancer backends: node-x (aws:///eu-west-1a/i-0abc)."},
		},
		routeNodes: gceNodes,
		routeCheck: func(t *testing.T, calls []standin.Call) {
			if len(calls) != 3 {
				t.Fatalf("route calls %+v, want 3 routes", calls)
			}
			r := findCall(t, calls, "google_compute_route", "dest_range", "10.244.3.0/24")
			if r.Values["next_hop_ip"] != "10.132.0.4" || r.Values["network"] != "k8s" || !strings.HasPrefix(r.Values["name"].(string), "prod-") ||
				len(r.Values["name"].(string)) > 63 || r.Values["description"] != "Pod CIDR of node node-c (tfccm)" {
				t.Errorf("route %v", r.Values)
			}
		},
		routeErrs: []routeErr{
			{name: "ipv6", nodes: func() []*corev1.Node {
				return []*corev1.Node{node("node-a", "gce://shop-prod/europe-west1-b/node-a", "10.132.0.2", "", "10.244.1.0/24", "fd00:10:244:1::/64")}
			}, wantErr: "IPv6 pod CIDRs cannot be routed"},
		},
		infra: "testdata/google/infra",
		infraFixture: map[string]map[string]any{
			"google_compute_instance":        {"current_status": "RUNNING", "machine_type": "projects/shop-prod/zones/europe-west1-b/machineTypes/e2-standard-4"},
			"google_compute_instance#node-c": {"current_status": "TERMINATED"},
		},
		wantInstances: func(t *testing.T, got []*instances.Instance) {
			if len(got) != 3 {
				t.Fatalf("%d instances, want 3: %+v", len(got), got)
			}
			zones := []string{"europe-west1-b", "europe-west1-c", "europe-west1-c"}
			for i, in := range got {
				name := []string{"node-a", "node-b", "node-c"}[i]
				if in.Name != name || in.ProviderID != "gce://shop-prod/"+zones[i]+"/"+name || in.InstanceType != "e2-standard-4" ||
					in.Zone != zones[i] || in.Region != "europe-west1" || in.Shutdown != (name == "node-c") {
					t.Errorf("instance %d: %+v", i, in)
				}
				if len(in.Addresses) != 3 || in.Addresses[0].Type != "InternalIP" || in.Addresses[1].Type != "ExternalIP" || in.Addresses[2].Address != name {
					t.Errorf("%s addresses %v", name, in.Addresses)
				}
			}
		},
	}
}

// TestGoogleSharedAddress: two internal Services share one address
// (tfccm.io/allow-shared-ip), web on 80+443/TCP and DNS on 53/TCP+UDP
// (a rule per protocol, which the set would reserve an address for were
// it not shared). Google lets
// internal forwarding rules share an address only when it is reserved with
// purpose SHARED_LOADBALANCER_VIP (the stand-in refuses a second rule on
// any other), so the user reserves it; each Service gets its own rules on
// it and reserves nothing, and deleting one leaves the other's rules.
func TestGoogleSharedAddress(t *testing.T) {
	c := googleCloud()
	env := standin.Setup(t, c.provider)
	env.Only = c.only
	set, err := templates.LoadBuiltin(c.set)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	cfg := parseConfig(t, c.config, work)
	apply := func(dir string, args ...string) []standin.Call {
		t.Helper()
		env.Tofu(t, dir, "init", "-input=false", "-no-color")
		noWarnings(t, args[0], env.Tofu(t, dir, append(args, "-auto-approve", "-input=false", "-no-color")...))
		return env.Calls(t)
	}

	// The user's reservation (their own infrastructure).
	infra := filepath.Join(work, "infra")
	if err := os.MkdirAll(infra, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(infra, "main.tf"), []byte(`terraform {
  required_providers {
    google = { source = "hashicorp/google" }
  }
}

resource "google_compute_address" "dns" {
  name         = "dns-vip"
  region       = "europe-west1"
  subnetwork   = "nodes"
  address      = "10.132.0.70"
  address_type = "INTERNAL"
  purpose      = "SHARED_LOADBALANCER_VIP"
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	apply(infra, "apply")

	services := map[string]*corev1.Service{
		"web": service(nil),
		"dns": service(func(s *corev1.Service) {
			s.UID = "0b7e8f5a-1c2d-4e3f-9a8b-7c6d5e4f3a2b"
			s.Spec.Ports = []corev1.ServicePort{
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053},
				{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, NodePort: 30053},
			}
		}),
	}
	dirs := map[string]string{}
	created := map[string]int{}
	for _, name := range []string{"web", "dns"} {
		svc := services[name]
		svc.Name = name
		svc.Annotations["tfccm.io/internal"] = "true"
		svc.Annotations["tfccm.io/load-balancer-ips"] = "10.132.0.70"
		ws, err := set.RenderLoadBalancer(cfg, svc, gceNodes(), sharing(t, svc, "dns"))
		if err != nil {
			t.Fatal(err)
		}
		dirs[name] = filepath.Join(work, name)
		if err := ws.WriteDir(dirs[name]); err != nil {
			t.Fatal(err)
		}
		calls := apply(dirs[name], "apply")
		created[name] = len(calls)
		if n := len(callsOf(calls, "google_compute_address")); n != 0 {
			t.Errorf("%s reserved %d addresses, want the user's shared one used", name, n)
		}
		for _, r := range callsOf(calls, "google_compute_forwarding_rule") {
			if r.Values["ip_address"] != "10.132.0.70" || r.Values["load_balancing_scheme"] != "INTERNAL" {
				t.Errorf("%s: forwarding rule %v", name, r.Values)
			}
		}
	}

	// web goes: only its own objects are deleted.
	deleted := apply(dirs["web"], "destroy")
	for _, call := range deleted {
		if call.Op != "delete" || call.Type == "google_compute_address" {
			t.Errorf("destroying web: %+v", call)
		}
	}
	if len(deleted) != created["web"] {
		t.Errorf("destroying web made %d calls, want its %d objects deleted", len(deleted), created["web"])
	}
	apply(dirs["dns"], "destroy")
	apply(infra, "destroy")
	assertStoreEmpty(t, env)
}
