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

func doNodes() []*corev1.Node {
	return []*corev1.Node{
		node("node-a", "digitalocean://2001", "10.110.0.2", "198.51.100.1"),
		node("node-b", "digitalocean://2002", "10.110.0.3", "198.51.100.2"),
		node("node-c", "digitalocean://2003", "10.110.0.4", "198.51.100.3"),
	}
}

// doLB returns the one load balancer create call.
func doLB(t *testing.T, calls []standin.Call) map[string]any {
	t.Helper()
	lbs := callsOf(calls, "digitalocean_loadbalancer")
	if len(lbs) != 1 || len(calls) != 1 {
		t.Fatalf("calls %+v, want one load balancer create", calls)
	}
	return lbs[0].Values
}

func rules(lb map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, r := range lb["forwarding_rule"].([]any) {
		m := r.(map[string]any)
		out[m["entry_protocol"].(string)+"/"+string(m["entry_port"].(json.Number))] = m
	}
	return out
}

func TestDigitalOcean(t *testing.T) { runCloud(t, digitalOceanCloud()) }

func digitalOceanCloud() cloud {
	return cloud{
		set:      "digitalocean",
		provider: "digitalocean",
		config: `
load_balancer {
  settings     = { region = "fra1", vpc_uuid = "c3a0c7e2-1111-2222-3333-444455556666" }
  service_vars = ["hostname", "size_unit"]
}
`,
		nodes: doNodes,
		// Values the real API reports (UUIDs; no certificate on TCP rules).
		fixture: map[string]map[string]any{"digitalocean_loadbalancer": {
			"status": "active", "project_id": "0b1e2f3a-0000-4000-8000-00000000000a", "subnet_uuid": "0b1e2f3a-0000-4000-8000-00000000000b",
			"forwarding_rule.certificate_id": "", "forwarding_rule.certificate_name": "",
		}},
		nodeRemoved: func(t *testing.T, calls []standin.Call) {
			if len(calls) != 1 || calls[0].Op != "update" || calls[0].Type != "digitalocean_loadbalancer" {
				t.Fatalf("removing node-c: calls %+v, want one load balancer update", calls)
			}
			if ids, _ := json.Marshal(calls[0].Values["droplet_ids"]); string(ids) != "[2001,2002]" {
				t.Errorf("droplet_ids after removing node-c: %s", ids)
			}
		},
		lb: []lbCase{
			{name: "basic", golden: true, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				lb := doLB(t, calls)
				if lb["region"] != "fra1" || lb["type"] != "REGIONAL" || lb["network"] != "EXTERNAL" || lb["network_stack"] != "IPV4" ||
					lb["enable_proxy_protocol"] != false || lb["vpc_uuid"] != "c3a0c7e2-1111-2222-3333-444455556666" || lb["size_unit"] != json.Number("1") {
					t.Errorf("load balancer %v", lb)
				}
				r := rules(lb)
				if len(r) != 2 || r["tcp/80"]["target_port"] != json.Number("30080") || r["tcp/443"]["target_protocol"] != "tcp" || r["tcp/443"]["target_port"] != json.Number("30443") {
					t.Errorf("forwarding rules %v", r)
				}
				hc := nested(lb["healthcheck"])
				if hc["protocol"] != "http" || hc["port"] != json.Number("10256") || hc["path"] != "/healthz" {
					t.Errorf("health check %v", hc)
				}
				if ids := lb["droplet_ids"].([]any); len(ids) != 3 {
					t.Errorf("droplet_ids %v", ids)
				}
				if len(lb["firewall"].([]any)) != 0 {
					t.Errorf("firewall without source ranges: %v", lb["firewall"])
				}
				if len(ingress) != 1 || ingress[0]["ip"] != lb["ip"] || ingress[0]["ip_mode"] != "Proxy" {
					t.Errorf("ingress %v, want the LB's IP %v in Proxy mode", ingress, lb["ip"])
				}
			}},
			{name: "etp-local", mut: etpLocal, check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
				hc := nested(doLB(t, calls)["healthcheck"])
				if hc["protocol"] != "http" || hc["port"] != json.Number("32000") || hc["path"] != "/healthz" {
					t.Errorf("ETP=Local health check %v, want HTTP /healthz on 32000", hc)
				}
			}},
			{name: "source-ranges-udp", golden: true, mut: func(s *corev1.Service) {
				udp(s)
				s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24", "2001:db8::/32"}
			}, check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
				lb := doLB(t, calls)
				fw := nested(lb["firewall"])
				if allow, _ := json.Marshal(fw["allow"]); string(allow) != `["cidr:192.0.2.0/24","cidr:2001:db8::/32"]` {
					t.Errorf("firewall %v", fw)
				}
				if r := rules(lb)["udp/53"]; r == nil || r["target_protocol"] != "udp" || r["target_port"] != json.Number("30053") {
					t.Errorf("UDP rule %v", rules(lb))
				}
			}},
			{name: "dual-stack", mut: dualStack, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				lb := doLB(t, calls)
				if lb["network_stack"] != "DUALSTACK" || len(ingress) != 2 || ingress[0]["ip"] != lb["ip"] || ingress[1]["ip"] != lb["ipv6"] {
					t.Errorf("dual-stack: network_stack %v, ingress %v", lb["network_stack"], ingress)
				}
			}},
			{name: "ipv6-only", mut: func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} },
				check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
					if len(ingress) != 1 || !strings.Contains(ingress[0]["ip"].(string), ":") {
						t.Errorf("IPv6 ingress %v", ingress)
					}
				}},
			{name: "internal-proxy", golden: true, mut: func(s *corev1.Service) {
				s.Annotations["tfccm.io/internal"] = "true"
				s.Annotations["tfccm.io/proxy-protocol"] = "true"
			}, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				lb := doLB(t, calls)
				if lb["network"] != "INTERNAL" || lb["enable_proxy_protocol"] != true {
					t.Errorf("internal PROXY load balancer %v", lb)
				}
				if len(ingress) != 1 || ingress[0]["ip"] != lb["ip"] {
					t.Errorf("internal ingress %v", ingress)
				}
			}},
			{name: "hostname", mut: func(s *corev1.Service) {
				s.Annotations["tfccm.io/vars"] = `{"hostname": "web.example.com", "size_unit": 3}`
			},
				check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
					if lb := doLB(t, calls); lb["size_unit"] != json.Number("3") {
						t.Errorf("size_unit %v", lb["size_unit"])
					}
					if len(ingress) != 1 || ingress[0]["hostname"] != "web.example.com" || ingress[0]["ip"] != nil {
						t.Errorf("hostname ingress %v", ingress)
					}
				}},
			{name: "refuse-shared-ip", shared: "web", mut: func(s *corev1.Service) { s.Annotations["tfccm.io/load-balancer-ips"] = "203.0.113.50" },
				wantErr: "tfccm.io/allow-shared-ip: every DigitalOcean load balancer has an address of its own"},
			{name: "refuse-sctp", mut: func(s *corev1.Service) {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "sctp", Protocol: corev1.ProtocolSCTP, Port: 9999, NodePort: 30999})
			}, wantErr: "spec.ports: DigitalOcean load balancers forward TCP and UDP only; unsupported: 9999/SCTP."},
			{name: "refuse-requested-ip", mut: func(s *corev1.Service) { s.Spec.LoadBalancerIP = "198.51.100.9" },
				wantErr: "spec.loadBalancerIP: DigitalOcean assigns load balancer addresses itself"},
			{name: "refuse-internal-ipv6", mut: func(s *corev1.Service) {
				dualStack(s)
				s.Annotations["tfccm.io/internal"] = "true"
			}, wantErr: "spec.ipFamilies: an internal DigitalOcean load balancer has a private IPv4 VPC address only"},
			{name: "refuse-proxy-udp", mut: func(s *corev1.Service) {
				udp(s)
				s.Annotations["tfccm.io/proxy-protocol"] = "true"
			}, wantErr: "tfccm.io/proxy-protocol: DigitalOcean load balancers send the PROXY header on TCP connections only"},
			{name: "refuse-foreign-node", nodes: func() []*corev1.Node {
				return []*corev1.Node{node("node-a", "digitalocean://2001", "10.0.1.1", ""), node("robot-1", "hrobot://4711", "10.0.1.9", "")}
			}, wantErr: "Nodes whose providerID is not digitalocean://<droplet id> cannot be DigitalOcean load balancer targets: robot-1 (hrobot://4711)."},
			{name: "refuse-client-ip-affinity", mut: func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP },
				wantErr: "spec.sessionAffinity: ClientIP is not possible"},
		},
		infra:        "testdata/digitalocean/infra",
		infraFixture: map[string]map[string]any{"digitalocean_droplet#node-c": {"status": "off"}, "digitalocean_droplet": {"status": "active"}},
		wantInstances: func(t *testing.T, got []*instances.Instance) {
			if len(got) != 3 {
				t.Fatalf("%d instances, want 3: %+v", len(got), got)
			}
			for i, in := range got {
				name := []string{"node-a", "node-b", "node-c"}[i]
				if in.Name != name || !regexp.MustCompile(`^digitalocean://[0-9]+$`).MatchString(in.ProviderID) || in.InstanceType != "s-2vcpu-4gb" ||
					in.Zone != "fra1" || in.Region != "fra1" || in.Shutdown != (name == "node-c") {
					t.Errorf("instance %d: %+v", i, in)
				}
				want := []string{"InternalIP 10.", "ExternalIP 203.0.113.", "ExternalIP 2001:db8:", "Hostname " + name}
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
