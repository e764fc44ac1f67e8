package clouds

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/instances"
	"github.com/tfccm/tfccm/test/standin"
)

func osNodes() []*corev1.Node {
	return dualStackNodes(func(i int) string { return "openstack:///5f0c0e1a-0000-4000-8000-00000000000" + string(rune('1'+i)) }, false)
}

// osLB returns the load balancer create call.
func osLB(t *testing.T, calls []standin.Call) map[string]any {
	t.Helper()
	lbs := callsOf(calls, "openstack_lb_loadbalancer_v2")
	if len(lbs) != 1 {
		t.Fatalf("calls %+v, want one load balancer", calls)
	}
	return lbs[0].Values
}

// osByName maps the name attribute of typ's calls to their values.
func osByName(calls []standin.Call, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, c := range callsOf(calls, typ) {
		out[c.Values["name"].(string)] = c.Values
	}
	return out
}

// osMembers maps the member name to its block, for the pool of one listener key.
func osMembers(t *testing.T, calls []standin.Call, pools map[string]map[string]any, key string) map[string]map[string]any {
	t.Helper()
	pool := pools["prod-cc888fe439-"+key]
	if pool == nil {
		t.Fatalf("no pool for %s in %v", key, pools)
	}
	out := map[string]map[string]any{}
	for _, c := range callsOf(calls, "openstack_lb_members_v2") {
		if c.Values["pool_id"] != pool["id"] {
			continue
		}
		for _, m := range c.Values["member"].([]any) {
			mm := m.(map[string]any)
			out[mm["name"].(string)] = mm
		}
	}
	return out
}

func TestOpenStack(t *testing.T) { runCloud(t, openStackCloud()) }

func openStackCloud() cloud {
	const subnet = "8c0a2f6e-1111-4222-8333-444455556666"
	return cloud{
		set:      "openstack",
		provider: "openstack",
		config: `
load_balancer {
  settings     = { subnet_id = "` + subnet + `", floating_network = "public" }
  service_vars = ["floating_network", "lb_method", "loadbalancer_provider", "octavia_api_version"]
}
routes {
  settings = { router_id = "2b7d3c4e-aaaa-4bbb-8ccc-dddddddddddd" }
}
`,
		nodes: osNodes,
		fixture: map[string]map[string]any{
			"openstack_lb_loadbalancer_v2":       {"vip_address": "10.0.10.100", "vip_port_id": "7a1b2c3d-0000-4000-8000-0000000000aa"},
			"openstack_networking_floatingip_v2": {"address": "198.51.100.10"},
		},
		nodeRemoved: func(t *testing.T, calls []standin.Call) {
			if len(calls) == 0 {
				t.Fatal("removing node-c made no calls")
			}
			for _, c := range calls {
				if c.Op != "update" || c.Type != "openstack_lb_members_v2" || len(c.Values["member"].([]any)) != 2 {
					t.Errorf("removing node-c: call %+v, want a members update to node-a and node-b", c)
				}
			}
		},
		lb: []lbCase{
			{name: "basic", golden: true, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				lb := osLB(t, calls)
				if lb["vip_subnet_id"] != subnet || lb["vip_address"] != "10.0.10.100" || lb["name"] != "prod-cc888fe439" {
					t.Errorf("load balancer %v", lb)
				}
				l := osByName(calls, "openstack_lb_listener_v2")
				if len(l) != 2 || l["prod-cc888fe439-tcp-80"]["protocol"] != "TCP" || l["prod-cc888fe439-tcp-443"]["protocol_port"] != json.Number("443") ||
					l["prod-cc888fe439-tcp-80"]["loadbalancer_id"] != lb["id"] || l["prod-cc888fe439-tcp-80"]["allowed_cidrs"] != nil {
					t.Errorf("listeners %v", l)
				}
				pools := osByName(calls, "openstack_lb_pool_v2")
				for k, p := range pools {
					if p["protocol"] != "TCP" || p["lb_method"] != "ROUND_ROBIN" || len(p["persistence"].([]any)) != 0 || p["listener_id"] != l[k]["id"] {
						t.Errorf("pool %s %v", k, p)
					}
				}
				m := osMembers(t, calls, pools, "tcp-443")
				if len(m) != 3 || m["node-b"]["address"] != "10.0.10.3" || m["node-b"]["protocol_port"] != json.Number("30443") ||
					m["node-b"]["monitor_port"] != json.Number("10256") || m["node-b"]["subnet_id"] != subnet {
					t.Errorf("members %v", m)
				}
				for k, mon := range osByName(calls, "openstack_lb_monitor_v2") {
					if mon["type"] != "HTTP" || mon["url_path"] != "/healthz" || mon["pool_id"] != pools[k]["id"] || mon["delay"] != json.Number("5") {
						t.Errorf("monitor %s %v", k, mon)
					}
				}
				fip := callsOf(calls, "openstack_networking_floatingip_v2")
				assoc := callsOf(calls, "openstack_networking_floatingip_associate_v2")
				if len(fip) != 1 || fip[0].Values["pool"] != "public" || len(assoc) != 1 ||
					assoc[0].Values["port_id"] != lb["vip_port_id"] || assoc[0].Values["floating_ip"] != "198.51.100.10" {
					t.Errorf("floating IP %+v, association %+v", fip, assoc)
				}
				if len(ingress) != 1 || ingress[0]["ip"] != "198.51.100.10" || ingress[0]["ip_mode"] != "VIP" {
					t.Errorf("ingress %v, want the floating IP in VIP mode", ingress)
				}
			}},
			{name: "etp-local", mut: etpLocal, check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
				m := osMembers(t, calls, osByName(calls, "openstack_lb_pool_v2"), "tcp-80")
				if m["node-a"]["monitor_port"] != json.Number("32000") || m["node-a"]["protocol_port"] != json.Number("30080") {
					t.Errorf("ETP=Local members %v, want monitor port 32000", m)
				}
			}},
			{name: "source-ranges-udp", golden: true, mut: func(s *corev1.Service) {
				udp(s)
				s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24", "198.51.100.0/24"}
			}, check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
				l := osByName(calls, "openstack_lb_listener_v2")
				if len(l) != 3 || l["prod-cc888fe439-udp-53"]["protocol"] != "UDP" {
					t.Fatalf("listeners %v", l)
				}
				for k, v := range l {
					if cidrs, _ := json.Marshal(v["allowed_cidrs"]); string(cidrs) != `["192.0.2.0/24","198.51.100.0/24"]` {
						t.Errorf("listener %s allowed_cidrs %s", k, cidrs)
					}
				}
				if p := osByName(calls, "openstack_lb_pool_v2")["prod-cc888fe439-udp-53"]; p["protocol"] != "UDP" {
					t.Errorf("UDP pool %v", p)
				}
			}},
			{name: "proxy-protocol-client-ip", mut: func(s *corev1.Service) {
				s.Annotations["tfccm.io/proxy-protocol"] = "true"
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			}, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				for k, p := range osByName(calls, "openstack_lb_pool_v2") {
					if p["protocol"] != "PROXY" || nested(p["persistence"])["type"] != "SOURCE_IP" {
						t.Errorf("pool %s %v, want PROXY with SOURCE_IP persistence", k, p)
					}
				}
				if ingress[0]["ip_mode"] != "Proxy" {
					t.Errorf("PROXY protocol ingress %v, want Proxy mode", ingress)
				}
			}},
			{name: "internal-requested-ip", golden: true, mut: func(s *corev1.Service) {
				s.Annotations["tfccm.io/internal"] = "true"
				s.Spec.LoadBalancerIP = "10.0.10.50"
			}, fixture: map[string]map[string]any{"openstack_lb_loadbalancer_v2": {"vip_address": "10.0.10.50"}},
				check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
					if lb := osLB(t, calls); lb["vip_address"] != "10.0.10.50" {
						t.Errorf("internal load balancer %v", lb)
					}
					if n := len(callsOf(calls, "openstack_networking_floatingip_v2")); n != 0 {
						t.Errorf("internal load balancer got %d floating IPs", n)
					}
					if len(ingress) != 1 || ingress[0]["ip"] != "10.0.10.50" {
						t.Errorf("internal ingress %v", ingress)
					}
				}},
			{name: "ipv6", mut: func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} },
				fixture: map[string]map[string]any{"openstack_lb_loadbalancer_v2": {"vip_address": "2001:db8:10::100"}},
				check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
					m := osMembers(t, calls, osByName(calls, "openstack_lb_pool_v2"), "tcp-80")
					if m["node-c"]["address"] != "fd00:10::4" {
						t.Errorf("IPv6 members %v", m)
					}
					if n := len(callsOf(calls, "openstack_networking_floatingip_v2")); n != 0 || ingress[0]["ip"] != "2001:db8:10::100" {
						t.Errorf("IPv6 load balancer: %d floating IPs, ingress %v; want the VIP", n, ingress)
					}
				}},
			{name: "requested-floating-ip", mut: func(s *corev1.Service) { s.Spec.LoadBalancerIP = "198.51.100.77" },
				check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
					if n := len(callsOf(calls, "openstack_networking_floatingip_v2")); n != 0 {
						t.Errorf("a requested floating IP allocated %d new ones; want the project's own associated", n)
					}
					a := callsOf(calls, "openstack_networking_floatingip_associate_v2")
					if len(a) != 1 || a[0].Values["floating_ip"] != "198.51.100.77" || ingress[0]["ip"] != "198.51.100.77" {
						t.Errorf("association %+v, ingress %v; want the requested floating IP", a, ingress)
					}
					if lb := osLB(t, calls); lb["vip_address"] == "198.51.100.77" {
						t.Errorf("the requested public IP became the VIP: %v", lb)
					}
				}},
			// The OVN provider driver refuses members with monitor options and
			// HTTP monitors: TCP (UDP-CONNECT) monitors on the node port, as
			// cloud-provider-openstack builds them for ovn, and its one
			// lb_method.
			{name: "ovn", golden: true, mut: func(s *corev1.Service) {
				etpLocal(s)
				udp(s)
				s.Annotations["tfccm.io/vars"] = `{"loadbalancer_provider": "ovn"}`
			}, check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
				if lb := osLB(t, calls); lb["loadbalancer_provider"] != "ovn" {
					t.Errorf("load balancer %v", lb)
				}
				pools := osByName(calls, "openstack_lb_pool_v2")
				for _, key := range []string{"tcp-80", "tcp-443", "udp-53"} {
					for name, m := range osMembers(t, calls, pools, key) {
						if m["monitor_port"] != nil || m["monitor_address"] != nil {
							t.Errorf("ovn member %s of %s has monitor options: %v", name, key, m)
						}
					}
				}
				for k, p := range pools {
					if p["lb_method"] != "SOURCE_IP_PORT" {
						t.Errorf("ovn pool %s lb_method %v", k, p["lb_method"])
					}
				}
				want := map[string]string{"prod-cc888fe439-tcp-80": "TCP", "prod-cc888fe439-tcp-443": "TCP", "prod-cc888fe439-udp-53": "UDP-CONNECT"}
				mons := osByName(calls, "openstack_lb_monitor_v2")
				if len(mons) != len(want) {
					t.Errorf("monitors %v", mons)
				}
				for k, mon := range mons {
					// url_path and the like are computed: the stand-in invents them
					// when the set leaves them unset.
					if mon["type"] != want[k] || mon["url_path"] == "/healthz" || mon["http_method"] == "GET" || mon["expected_codes"] == "200" {
						t.Errorf("ovn monitor %s %v, want %s on the node port", k, mon, want[k])
					}
				}
			}},
			// HTTP monitors on UDP pools need Octavia API 2.16; an older API
			// gets UDP-CONNECT monitors on the node port for UDP pools.
			{name: "udp-octavia-2.15", mut: func(s *corev1.Service) {
				udp(s)
				s.Annotations["tfccm.io/vars"] = `{"octavia_api_version": "2.15"}`
			}, check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
				mons := osByName(calls, "openstack_lb_monitor_v2")
				if m := mons["prod-cc888fe439-udp-53"]; m["type"] != "UDP-CONNECT" || m["url_path"] == "/healthz" {
					t.Errorf("UDP monitor on Octavia 2.15 %v, want UDP-CONNECT", m)
				}
				if m := mons["prod-cc888fe439-tcp-80"]; m["type"] != "HTTP" {
					t.Errorf("TCP monitor %v, want HTTP", m)
				}
				pools := osByName(calls, "openstack_lb_pool_v2")
				if m := osMembers(t, calls, pools, "udp-53")["node-a"]; m["monitor_port"] != nil {
					t.Errorf("UDP member %v has a monitor port its UDP-CONNECT monitor does not use", m)
				}
				if m := osMembers(t, calls, pools, "tcp-80")["node-a"]; m["monitor_port"] != json.Number("10256") {
					t.Errorf("TCP member %v, want monitor port 10256", m)
				}
			}},
			{name: "refuse-shared-ip", shared: "web", mut: func(s *corev1.Service) { s.Annotations["tfccm.io/load-balancer-ips"] = "203.0.113.50" },
				wantErr: "tfccm.io/allow-shared-ip: every Octavia load balancer has a VIP of its own"},
			{name: "refuse-ovn-source-ranges", mut: func(s *corev1.Service) {
				s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
				s.Annotations["tfccm.io/vars"] = `{"loadbalancer_provider": "ovn"}`
			}, wantErr: "spec.loadBalancerSourceRanges: the ovn provider does not enforce listener allowed_cidrs"},
			{name: "refuse-ovn-proxy-protocol", mut: func(s *corev1.Service) {
				s.Annotations["tfccm.io/proxy-protocol"] = "true"
				s.Annotations["tfccm.io/vars"] = `{"loadbalancer_provider": "ovn"}`
			}, wantErr: "tfccm.io/proxy-protocol: the ovn provider balances packets (L4) and cannot send the PROXY protocol"},
			{name: "refuse-ovn-lb-method", mut: func(s *corev1.Service) {
				s.Annotations["tfccm.io/vars"] = `{"loadbalancer_provider": "ovn", "lb_method": "ROUND_ROBIN"}`
			}, wantErr: "settings.lb_method: the ovn provider balances by SOURCE_IP_PORT only"},
			{name: "refuse-proxy-udp", mut: func(s *corev1.Service) { udp(s); s.Annotations["tfccm.io/proxy-protocol"] = "true" },
				wantErr: "tfccm.io/proxy-protocol: the PROXY protocol is sent on TCP connections only; these ports are not TCP: 53/UDP."},
			{name: "refuse-dual-stack", mut: dualStack,
				wantErr: "spec.ipFamilies: an Octavia load balancer has one VIP address; dual-stack is not possible"},
			{name: "refuse-node-without-address", mut: func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} },
				nodes:   func() []*corev1.Node { return []*corev1.Node{node("node-a", "openstack:///x", "10.0.10.2", "")} },
				wantErr: "Pool members are the nodes' IPv6 InternalIPs; these nodes have none: node-a."},
			{name: "refuse-public-without-floating-network", mut: func(s *corev1.Service) {
				s.Annotations["tfccm.io/vars"] = `{"floating_network": null}`
			}, wantErr: "A public OpenStack load balancer gets a floating IP from an external network; set settings.floating_network"},
		},
		routeNodes: osNodes,
		routeCheck: func(t *testing.T, calls []standin.Call) {
			if len(calls) != 3 {
				t.Fatalf("route calls %+v, want 3 router routes", calls)
			}
			r := findCall(t, calls, "openstack_networking_router_route_v2", "destination_cidr", "10.244.2.0/24")
			if r.Values["next_hop"] != "10.0.10.3" || r.Values["router_id"] != "2b7d3c4e-aaaa-4bbb-8ccc-dddddddddddd" {
				t.Errorf("route %v", r.Values)
			}
		},
		routeErrs: []routeErr{
			{name: "ipv6-without-address", nodes: func() []*corev1.Node {
				return []*corev1.Node{node("node-a", "openstack:///x", "10.0.10.2", "", "10.244.1.0/24", "fd00:10:244:1::/64")}
			}, wantErr: "Node node-a has no IPv6 InternalIP; the route to fd00:10:244:1::/64 needs one as its next hop."},
		},
		infra: "testdata/openstack/infra",
		infraFixture: map[string]map[string]any{
			"openstack_compute_instance_v2":        {"region": "RegionOne", "access_ip_v4": "", "network.fixed_ip_v6": ""},
			"openstack_compute_instance_v2#node-a": {"access_ip_v4": "198.51.100.1"},
		},
		wantInstances: func(t *testing.T, got []*instances.Instance) {
			if len(got) != 3 {
				t.Fatalf("%d instances, want 3: %+v", len(got), got)
			}
			for i, in := range got {
				name := []string{"node-a", "node-b", "node-c"}[i]
				if in.Name != name || !regexp.MustCompile(`^openstack:///[0-9a-z-]+$`).MatchString(in.ProviderID) || in.InstanceType != "m1.large" ||
					in.Zone != "nova" || in.Region != "RegionOne" || in.Shutdown != (name == "node-c") {
					t.Errorf("instance %d: %+v", i, in)
				}
				want := []string{"InternalIP 10.0.10." + string(rune('2'+i)), "Hostname " + name}
				if name == "node-a" {
					want = []string{"InternalIP 10.0.10.2", "ExternalIP 198.51.100.1", "Hostname node-a"}
				}
				var addrs []string
				for _, a := range in.Addresses {
					addrs = append(addrs, a.Type+" "+a.Address)
				}
				if strings.Join(addrs, ",") != strings.Join(want, ",") {
					t.Errorf("%s addresses %v, want %v", name, addrs, want)
				}
			}
		},
	}
}
