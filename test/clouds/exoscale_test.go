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

const exoPool = "5c2b6a3e-7d8f-4e9a-8b1c-2d3e4f5a6b7c"

func exoNodes() []*corev1.Node {
	return []*corev1.Node{
		node("node-a", "exoscale://0b1e2f3a-0000-4000-8000-00000000000a", "10.0.10.2", "198.51.100.1"),
		node("node-b", "exoscale://0b1e2f3a-0000-4000-8000-00000000000b", "10.0.10.3", "198.51.100.2"),
		node("node-c", "exoscale://0b1e2f3a-0000-4000-8000-00000000000c", "10.0.10.4", "198.51.100.3"),
	}
}

// exoServices maps NLB service name to its values.
func exoServices(calls []standin.Call) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, c := range callsOf(calls, "exoscale_nlb_service") {
		out[c.Values["name"].(string)] = c.Values
	}
	return out
}

func TestExoscale(t *testing.T) { runCloud(t, exoscaleCloud()) }

func exoscaleCloud() cloud {
	return cloud{
		set:      "exoscale",
		provider: "exoscale",
		config: `
load_balancer {
  settings = { zone = "ch-gva-2", instance_pool_id = "` + exoPool + `" }
}
`,
		nodes:   exoNodes,
		fixture: map[string]map[string]any{"exoscale_nlb": {"ip_address": "194.182.160.10", "state": "running"}},
		// The instance pool, not the Node list, holds the backends.
		nodeRemoved: func(t *testing.T, calls []standin.Call) {
			if len(calls) != 0 {
				t.Errorf("removing node-c: calls %+v, want none (the instance pool holds the targets)", calls)
			}
		},
		lb: []lbCase{
			{name: "basic", golden: true, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				nlb := callsOf(calls, "exoscale_nlb")
				if len(nlb) != 1 || nlb[0].Values["zone"] != "ch-gva-2" || nlb[0].Values["name"] != "prod-cc888fe439" {
					t.Fatalf("NLB %+v", nlb)
				}
				s := exoServices(calls)
				http := s["prod-cc888fe439-tcp-80"]
				if len(s) != 2 || http["nlb_id"] != nlb[0].ID || http["instance_pool_id"] != exoPool || http["protocol"] != "tcp" ||
					http["port"] != json.Number("80") || http["target_port"] != json.Number("30080") || http["strategy"] != "round-robin" {
					t.Errorf("services %v", s)
				}
				if hc := jsonOf(http["healthcheck"]); hc != `[{"interval":10,"mode":"http","port":10256,"retries":1,"timeout":5,"tls_sni":null,"uri":"/healthz"}]` {
					t.Errorf("health check %s", hc)
				}
				if len(ingress) != 1 || ingress[0]["ip"] != "194.182.160.10" || ingress[0]["ip_mode"] != "VIP" {
					t.Errorf("ingress %v", ingress)
				}
			}},
			{name: "etp-local-udp-client-ip", golden: true, mut: func(s *corev1.Service) {
				etpLocal(s)
				udp(s)
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			}, check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
				s := exoServices(calls)
				dns := s["prod-cc888fe439-udp-53"]
				if len(s) != 3 || dns["protocol"] != "udp" || dns["target_port"] != json.Number("30053") {
					t.Errorf("services %v", s)
				}
				for name, v := range s {
					hc := nested(v["healthcheck"])
					if v["strategy"] != "source-hash" || hc["port"] != json.Number("32000") || hc["mode"] != "http" {
						t.Errorf("service %s: %v", name, v)
					}
				}
			}},
			{name: "refuse-shared-ip", shared: "web", mut: func(s *corev1.Service) { s.Annotations["tfccm.io/load-balancer-ips"] = "194.182.160.50" },
				wantErr: "tfccm.io/allow-shared-ip: every Exoscale network load balancer has an address of its own"},
			{name: "refuse-internal", mut: func(s *corev1.Service) { s.Annotations["tfccm.io/internal"] = "true" },
				wantErr: "tfccm.io/internal: Exoscale network load balancers have a public address only"},
			{name: "refuse-source-ranges", mut: func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"} },
				wantErr: "spec.loadBalancerSourceRanges: Exoscale network load balancers cannot restrict clients by source address"},
			{name: "refuse-requested-ip", mut: func(s *corev1.Service) { s.Spec.LoadBalancerIP = "194.182.160.99" },
				wantErr: "spec.loadBalancerIP: Exoscale assigns the network load balancer's address itself"},
			{name: "refuse-ipv6", mut: dualStack, wantErr: "spec.ipFamilies: Exoscale network load balancers have an IPv4 address only."},
			{name: "refuse-sctp", mut: func(s *corev1.Service) {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "sctp", Protocol: corev1.ProtocolSCTP, Port: 9999, NodePort: 30999})
			}, wantErr: "spec.ports: Exoscale network load balancers forward TCP and UDP only; unsupported: 9999/SCTP."},
			{name: "refuse-proxy-protocol", mut: func(s *corev1.Service) { s.Annotations["tfccm.io/proxy-protocol"] = "true" },
				wantErr: "tfccm.io/proxy-protocol: Exoscale network load balancers forward packets and cannot send the PROXY protocol"},
		},
		infra: "testdata/exoscale/infra",
		infraFixture: map[string]map[string]any{
			"exoscale_compute_instance":        {"state": "running", "ipv6_address": ""},
			"exoscale_compute_instance#node-c": {"state": "stopped"},
		},
		wantInstances: func(t *testing.T, got []*instances.Instance) {
			if len(got) != 3 {
				t.Fatalf("%d instances, want 3: %+v", len(got), got)
			}
			for i, in := range got {
				name := []string{"node-a", "node-b", "node-c"}[i]
				if in.Name != name || !regexp.MustCompile(`^exoscale://[0-9a-z-]+$`).MatchString(in.ProviderID) || in.InstanceType != "standard.medium" ||
					in.Zone != "ch-gva-2" || in.Region != "ch-gva-2" || in.Shutdown != (name == "node-c") {
					t.Errorf("instance %d: %+v", i, in)
				}
				want := "InternalIP 10.0.10." + string(rune('2'+i)) + ",ExternalIP 203.0.113."
				if name == "node-c" { // no private network: the public IPv4 is also the InternalIP
					want = "InternalIP 203.0.113."
				}
				if got := addrs(in); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, ",Hostname "+name) || strings.Count(got, ",") != 2 {
					t.Errorf("%s addresses %s, want %s...", name, got, want)
				}
			}
		},
	}
}
