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

func hcloudNodes() []*corev1.Node {
	return []*corev1.Node{
		node("node-a", "hcloud://1001", "10.0.1.1", "198.51.100.1", "10.244.1.0/24"),
		node("node-b", "hcloud://1002", "10.0.1.2", "198.51.100.2", "10.244.2.0/24"),
		node("node-c", "hcloud://1003", "10.0.1.3", "198.51.100.3", "10.244.3.0/24"),
	}
}

func TestHcloud(t *testing.T) { runCloud(t, hcloudCloud()) }

func hcloudCloud() cloud {
	return cloud{
		set:      "hcloud",
		provider: "hcloud",
		config: `
load_balancer {
  settings     = { location = "fsn1" }
  service_vars = ["algorithm", "hostname", "network_id"]
}
routes {
  settings = { network_id = 4711 }
}
`,
		nodes: hcloudNodes,
		// Values the real API reports for a load balancer placed by location.
		fixture: map[string]map[string]any{"hcloud_load_balancer": {"network_zone": "eu-central"}},
		nodeRemoved: func(t *testing.T, calls []standin.Call) {
			if len(calls) != 1 || calls[0].Op != "delete" || calls[0].Type != "hcloud_load_balancer_target" || calls[0].Prior["server_id"] != json.Number("1003") {
				t.Errorf("removing node-c: calls %+v, want its target deleted", calls)
			}
		},
		lb: []lbCase{
			{name: "basic", golden: true, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				lb := callsOf(calls, "hcloud_load_balancer")[0]
				if lb.Values["location"] != "fsn1" || lb.Values["load_balancer_type"] != "lb11" || nested(lb.Values["algorithm"])["type"] != "round_robin" {
					t.Errorf("load balancer %v", lb.Values)
				}
				for port, nodePort := range map[string]string{"80": "30080", "443": "30443"} {
					s := findCall(t, calls, "hcloud_load_balancer_service", "listen_port", port)
					hc := nested(s.Values["health_check"])
					if s.Values["protocol"] != "tcp" || s.Values["destination_port"] != json.Number(nodePort) || s.Values["proxyprotocol"] != false ||
						s.Values["load_balancer_id"] != lb.ID {
						t.Errorf("service %s: %v", port, s.Values)
					}
					if hc["protocol"] != "http" || hc["port"] != json.Number("10256") || nested(hc["http"])["path"] != "/healthz" {
						t.Errorf("health check of %s: %v", port, hc)
					}
				}
				for _, id := range []string{"1001", "1002", "1003"} {
					tg := findCall(t, calls, "hcloud_load_balancer_target", "server_id", id)
					if tg.Values["type"] != "server" || tg.Values["use_private_ip"] != false || tg.Values["load_balancer_id"] != json.Number(lb.ID) {
						t.Errorf("target %s: %v", id, tg.Values)
					}
				}
				if len(calls) != 6 {
					t.Errorf("%d calls, want 6 (lb, 2 services, 3 targets)", len(calls))
				}
				if len(ingress) != 1 || ingress[0]["ip"] != lb.Values["ipv4"] || ingress[0]["ip_mode"] != "Proxy" {
					t.Errorf("ingress %v, want the LB's IPv4 %v in Proxy mode", ingress, lb.Values["ipv4"])
				}
			}},
			{name: "etp-local", golden: true, mut: etpLocal, check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
				for _, s := range callsOf(calls, "hcloud_load_balancer_service") {
					hc := nested(s.Values["health_check"])
					if hc["protocol"] != "http" || hc["port"] != json.Number("32000") || nested(hc["http"])["path"] != "/healthz" {
						t.Errorf("ETP=Local health check %v, want HTTP /healthz on 32000", hc)
					}
				}
			}},
			{name: "dual-stack", mut: dualStack, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				lb := callsOf(calls, "hcloud_load_balancer")[0]
				if len(ingress) != 2 || ingress[0]["ip"] != lb.Values["ipv4"] || ingress[1]["ip"] != lb.Values["ipv6"] {
					t.Errorf("dual-stack ingress %v", ingress)
				}
			}},
			{name: "ipv6-only", mut: func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} },
				check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
					if len(ingress) != 1 || !strings.Contains(ingress[0]["ip"].(string), ":") {
						t.Errorf("IPv6 ingress %v", ingress)
					}
				}},
			{name: "proxy-protocol", mut: func(s *corev1.Service) { s.Annotations["tfccm.io/proxy-protocol"] = "true" },
				check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
					for _, s := range callsOf(calls, "hcloud_load_balancer_service") {
						if s.Values["proxyprotocol"] != true {
							t.Errorf("service without PROXY protocol: %v", s.Values)
						}
					}
				}},
			{name: "internal-requested-ip", golden: true, mut: func(s *corev1.Service) {
				s.Annotations["tfccm.io/internal"] = "true"
				s.Annotations["tfccm.io/vars"] = `{"network_id": 4711}`
				s.Spec.LoadBalancerIP = "10.0.0.50"
			}, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				n := callsOf(calls, "hcloud_load_balancer_network")
				if len(n) != 1 || n[0].Values["ip"] != "10.0.0.50" || n[0].Values["enable_public_interface"] != false || n[0].Values["network_id"] != json.Number("4711") {
					t.Errorf("network attachment %+v", n)
				}
				for _, tg := range callsOf(calls, "hcloud_load_balancer_target") {
					if tg.Values["use_private_ip"] != true {
						t.Errorf("internal LB target not private: %v", tg.Values)
					}
				}
				if len(calls) != 7 {
					t.Errorf("%d calls, want 7 (lb, network, 2 services, 3 targets)", len(calls))
				}
				if len(ingress) != 1 || ingress[0]["ip"] != "10.0.0.50" {
					t.Errorf("internal ingress %v, want 10.0.0.50", ingress)
				}
			}},
			{name: "private-targets", mut: func(s *corev1.Service) {
				s.Annotations["tfccm.io/vars"] = `{"network_id": 4711, "algorithm": "least_connections"}`
			},
				check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
					n := callsOf(calls, "hcloud_load_balancer_network")
					if len(n) != 1 || n[0].Values["enable_public_interface"] != true {
						t.Errorf("network attachment %+v", n)
					}
					lb := callsOf(calls, "hcloud_load_balancer")[0]
					if len(ingress) != 1 || ingress[0]["ip"] != lb.Values["ipv4"] {
						t.Errorf("public LB with private targets: ingress %v", ingress)
					}
					if nested(lb.Values["algorithm"])["type"] != "least_connections" {
						t.Errorf("algorithm %v", lb.Values["algorithm"])
					}
				}},
			{name: "hostname", mut: func(s *corev1.Service) { s.Annotations["tfccm.io/vars"] = `{"hostname": "web.example.com"}` },
				check: func(t *testing.T, _ []standin.Call, ingress []map[string]any) {
					if len(ingress) != 1 || ingress[0]["hostname"] != "web.example.com" || ingress[0]["ip"] != nil {
						t.Errorf("hostname ingress %v", ingress)
					}
				}},
			{name: "refuse-shared-ip", shared: "web", mut: func(s *corev1.Service) { s.Annotations["tfccm.io/load-balancer-ips"] = "10.0.0.50" },
				wantErr: "tfccm.io/allow-shared-ip: every Hetzner Cloud load balancer has addresses of its own"},
			{name: "refuse-udp", mut: udp, wantErr: "spec.ports: Hetzner Cloud load balancers forward TCP only; unsupported: 53/UDP."},
			{name: "refuse-source-ranges", mut: func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"} },
				wantErr: "spec.loadBalancerSourceRanges: Hetzner Cloud load balancers cannot restrict clients by source address"},
			{name: "refuse-public-requested-ip", mut: func(s *corev1.Service) { s.Spec.LoadBalancerIP = "198.51.100.9" },
				wantErr: "spec.loadBalancerIP: Hetzner Cloud assigns public load balancer addresses itself"},
			{name: "refuse-internal-without-network", mut: func(s *corev1.Service) { s.Annotations["tfccm.io/internal"] = "true" },
				wantErr: "tfccm.io/internal: an internal Hetzner Cloud load balancer lives in a private network; set settings.network_id."},
			{name: "refuse-internal-ipv6", mut: func(s *corev1.Service) {
				dualStack(s)
				s.Annotations["tfccm.io/internal"] = "true"
				s.Annotations["tfccm.io/vars"] = `{"network_id": 4711}`
			}, wantErr: "spec.ipFamilies: an internal Hetzner Cloud load balancer has a private IPv4 address only"},
			{name: "refuse-foreign-node", nodes: func() []*corev1.Node {
				return []*corev1.Node{node("node-a", "hcloud://1001", "10.0.1.1", ""), node("robot-1", "hrobot://4711", "10.0.1.9", "")}
			}, wantErr: "Nodes whose providerID is not hcloud://<server id> cannot be Hetzner Cloud load balancer targets: robot-1 (hrobot://4711)."},
			{name: "refuse-no-node-ports", mut: func(s *corev1.Service) {
				no := false
				s.Spec.AllocateLoadBalancerNodePorts = &no
				for i := range s.Spec.Ports {
					s.Spec.Ports[i].NodePort = 0
				}
			}, wantErr: "Every Service port needs a nodePort"},
			{name: "refuse-client-ip-affinity", mut: func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP },
				wantErr: "spec.sessionAffinity: ClientIP is not possible"},
		},
		routeNodes: hcloudNodes,
		routeCheck: func(t *testing.T, calls []standin.Call) {
			if len(calls) != 3 {
				t.Fatalf("route calls %+v, want 3 creates", calls)
			}
			for i, n := range hcloudNodes() {
				r := findCall(t, calls, "hcloud_network_route", "destination", n.Spec.PodCIDR)
				if r.Op != "create" || r.Values["gateway"] != n.Status.Addresses[0].Address || r.Values["network_id"] != json.Number("4711") {
					t.Errorf("route %d: %+v", i, r)
				}
			}
		},
		routeErrs: []routeErr{
			{name: "ipv6", nodes: func() []*corev1.Node {
				return []*corev1.Node{node("node-a", "hcloud://1001", "10.0.1.1", "", "10.244.1.0/24", "fd00:10:244:1::/64")}
			}, wantErr: "Hetzner Cloud networks are IPv4 only; IPv6 pod CIDRs cannot be routed"},
			{name: "no-internal-ip", nodes: func() []*corev1.Node {
				n := node("node-a", "hcloud://1001", "10.0.1.1", "", "10.244.1.0/24")
				n.Status.Addresses = n.Status.Addresses[1:]
				return []*corev1.Node{n}
			}, wantErr: "Node node-a has no IPv4 InternalIP"},
		},
		infra:        "testdata/hcloud/infra",
		infraFixture: map[string]map[string]any{"hcloud_server#node-c": {"status": "off"}, "hcloud_server": {"datacenter": "fsn1-dc14", "status": "running"}},
		wantInstances: func(t *testing.T, got []*instances.Instance) {
			if len(got) != 3 {
				t.Fatalf("%d instances, want 3: %+v", len(got), got)
			}
			for i, in := range got {
				name := []string{"node-a", "node-b", "node-c"}[i]
				if in.Name != name || !regexp.MustCompile(`^hcloud://[0-9]+$`).MatchString(in.ProviderID) || in.InstanceType != "cx22" ||
					in.Zone != "fsn1-dc14" || in.Region != "fsn1" || in.Shutdown != (name == "node-c") {
					t.Errorf("instance %d: %+v", i, in)
				}
				want := []string{"InternalIP 10.0.1." + string(rune('1'+i)), "ExternalIP 203.0.113.", "ExternalIP 2001:db8:", "Hostname " + name}
				if len(in.Addresses) != len(want) {
					t.Errorf("%s addresses %v", name, in.Addresses)
					continue
				}
				for j, a := range in.Addresses {
					if !strings.HasPrefix(a.Type+" "+a.Address, want[j]) {
						t.Errorf("%s address %d: %v, want %s...", name, j, a, want[j])
					}
				}
			}
		},
	}
}
