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

const ociInstance = "oci://ocid1.instance.oc1.eu-frankfurt-1.node"

func ociNodes() []*corev1.Node {
	return dualStackNodes(func(i int) string { return ociInstance + string(rune('a'+i)) }, true)
}

// ociNLB returns the network load balancer create call.
func ociNLB(t *testing.T, calls []standin.Call) map[string]any {
	t.Helper()
	n := callsOf(calls, "oci_network_load_balancer_network_load_balancer")
	if len(n) != 1 {
		t.Fatalf("calls %+v, want one network load balancer", calls)
	}
	return n[0].Values
}

// listenersOf maps listener name to its values.
func listenersOf(calls []standin.Call) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, c := range callsOf(calls, "oci_network_load_balancer_listener") {
		out[c.Values["name"].(string)] = c.Values
	}
	return out
}

var ociPublicAddresses = []map[string]any{
	{"ip_address": "203.0.113.10", "ip_version": "IPV4", "is_public": true, "reserved_ip": []any{}},
	{"ip_address": "2001:db8::10", "ip_version": "IPV6", "is_public": true, "reserved_ip": []any{}},
}

func TestOCI(t *testing.T) { runCloud(t, ociCloud()) }

func ociCloud() cloud {
	return cloud{
		set:      "oci",
		provider: "oci",
		only: []string{"oci_network_load_balancer_", "oci_core_network_security_group", "oci_core_public_ip", "oci_core_private_ips",
			"oci_core_route_table", "oci_core_instance", "oci_core_vcn", "oci_core_subnet"},
		config: `
load_balancer {
  settings = {
    compartment_id = "ocid1.compartment.oc1..aaaaaaaaexample"
    subnet_id      = "ocid1.subnet.oc1.eu-frankfurt-1.aaaaaaaalb"
  }
  service_vars = ["vcn_id"]
}
routes {
  settings = {
    compartment_id = "ocid1.compartment.oc1..aaaaaaaaexample"
    vcn_id         = "ocid1.vcn.oc1.eu-frankfurt-1.aaaaaaaavcn"
    subnet_id      = "ocid1.subnet.oc1.eu-frankfurt-1.aaaaaaaanodes"
    base_rules = [
      { destination = "0.0.0.0/0", network_entity_id = "ocid1.internetgateway.oc1.eu-frankfurt-1.aaaaaaaaigw", description = "internet" },
    ]
  }
}
`,
		nodes: ociNodes,
		fixture: map[string]map[string]any{"oci_network_load_balancer_network_load_balancer": {
			"ip_addresses": ociPublicAddresses, "state": "ACTIVE",
		}},
		nodeRemoved: func(t *testing.T, calls []standin.Call) {
			if len(calls) == 0 {
				t.Fatal("removing node-c made no calls")
			}
			for _, c := range calls {
				if c.Op != "delete" || c.Type != "oci_network_load_balancer_backend" ||
					(c.Prior["target_id"] != strings.TrimPrefix(ociInstance, "oci://")+"c" && c.Prior["ip_address"] != "fd00:10::4") {
					t.Errorf("removing node-c: call %+v, want only its backends deleted", c)
				}
			}
		},
		lb: []lbCase{
			{name: "basic", golden: true, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				nlb := ociNLB(t, calls)
				if nlb["is_private"] != false || nlb["nlb_ip_version"] != "IPV4" || nlb["subnet_id"] != "ocid1.subnet.oc1.eu-frankfurt-1.aaaaaaaalb" ||
					nlb["is_preserve_source_destination"] != false || len(nlb["reserved_ips"].([]any)) != 0 {
					t.Errorf("network load balancer %v", nlb)
				}
				if !strings.HasPrefix(nlb["id"].(string), "ocid1.") {
					t.Errorf("id %v is not an OCID", nlb["id"])
				}
				l := listenersOf(calls)
				if len(l) != 2 || l["80-ipv4"]["protocol"] != "TCP" || l["443-ipv4"]["port"] != json.Number("443") || l["80-ipv4"]["is_ppv2enabled"] != false {
					t.Errorf("listeners %v", l)
				}
				for _, bs := range callsOf(calls, "oci_network_load_balancer_backend_set") {
					hc := nested(bs.Values["health_checker"])
					if bs.Values["policy"] != "FIVE_TUPLE" || hc["protocol"] != "HTTP" || hc["port"] != json.Number("10256") || hc["url_path"] != "/healthz" {
						t.Errorf("backend set %v", bs.Values)
					}
				}
				backends := callsOf(calls, "oci_network_load_balancer_backend")
				if len(backends) != 6 {
					t.Errorf("%d backends, want 6 (2 ports x 3 nodes)", len(backends))
				}
				b := findCall(t, calls, "oci_network_load_balancer_backend", "target_id", strings.TrimPrefix(ociInstance, "oci://")+"a")
				if b.Values["port"] != json.Number("30080") && b.Values["port"] != json.Number("30443") {
					t.Errorf("backend %v", b.Values)
				}
				if len(ingress) != 1 || ingress[0]["ip"] != "203.0.113.10" || ingress[0]["ip_mode"] != "VIP" {
					t.Errorf("ingress %v, want 203.0.113.10 in VIP mode", ingress)
				}
			}},
			{name: "etp-local", mut: etpLocal, check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
				for _, bs := range callsOf(calls, "oci_network_load_balancer_backend_set") {
					hc := nested(bs.Values["health_checker"])
					if hc["protocol"] != "HTTP" || hc["port"] != json.Number("32000") || hc["url_path"] != "/healthz" {
						t.Errorf("ETP=Local health check %v", hc)
					}
				}
			}},
			{name: "source-ranges-udp", golden: true, mut: func(s *corev1.Service) {
				udp(s)
				s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
				s.Annotations["tfccm.io/vars"] = `{"vcn_id": "ocid1.vcn.oc1.eu-frankfurt-1.aaaaaaaavcn"}`
			}, check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
				nsg := callsOf(calls, "oci_core_network_security_group")
				if len(nsg) != 1 {
					t.Fatalf("NSGs %+v", nsg)
				}
				if ids, _ := json.Marshal(ociNLB(t, calls)["network_security_group_ids"]); string(ids) != `["`+nsg[0].ID+`"]` {
					t.Errorf("NLB NSGs %s, want the source-range NSG", ids)
				}
				rules := callsOf(calls, "oci_core_network_security_group_security_rule")
				if len(rules) != 4 {
					t.Errorf("%d security rules, want 3 ingress + 1 egress", len(rules))
				}
				in := findCall(t, calls, "oci_core_network_security_group_security_rule", "protocol", "17")
				if in.Values["source"] != "192.0.2.0/24" || in.Values["direction"] != "INGRESS" || nested(nested(in.Values["udp_options"])["destination_port_range"])["min"] != json.Number("53") {
					t.Errorf("UDP ingress rule %v", in.Values)
				}
				if l := listenersOf(calls)["53-ipv4"]; l["protocol"] != "UDP" {
					t.Errorf("UDP listener %v", l)
				}
			}},
			{name: "tcp-and-udp", mut: func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{
					{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, NodePort: 30053},
					{Name: "dns-udp", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053},
				}
			}, check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
				if l := listenersOf(calls); len(l) != 1 || l["53-ipv4"]["protocol"] != "TCP_AND_UDP" {
					t.Errorf("listeners %v, want one TCP_AND_UDP", l)
				}
			}},
			{name: "dual-stack", mut: dualStack, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				if v := ociNLB(t, calls)["nlb_ip_version"]; v != "IPV4_AND_IPV6" {
					t.Errorf("nlb_ip_version %v", v)
				}
				l := listenersOf(calls)
				if len(l) != 4 || l["80-ipv6"]["ip_version"] != "IPV6" {
					t.Errorf("listeners %v", l)
				}
				findCall(t, calls, "oci_network_load_balancer_backend", "ip_address", "fd00:10::2")
				if len(ingress) != 2 || ingress[1]["ip"] != "2001:db8::10" {
					t.Errorf("dual-stack ingress %v", ingress)
				}
			}},
			{name: "proxy-protocol-client-ip", mut: func(s *corev1.Service) {
				s.Annotations["tfccm.io/proxy-protocol"] = "true"
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			}, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				for _, l := range listenersOf(calls) {
					if l["is_ppv2enabled"] != true {
						t.Errorf("listener without PROXY v2: %v", l)
					}
				}
				for _, bs := range callsOf(calls, "oci_network_load_balancer_backend_set") {
					if bs.Values["policy"] != "TWO_TUPLE" {
						t.Errorf("ClientIP affinity policy %v", bs.Values["policy"])
					}
				}
				if ingress[0]["ip_mode"] != "Proxy" {
					t.Errorf("PROXY protocol ingress %v, want Proxy mode", ingress)
				}
			}},
			{name: "internal-requested-ip", golden: true, mut: func(s *corev1.Service) {
				s.Annotations["tfccm.io/internal"] = "true"
				s.Spec.LoadBalancerIP = "10.0.10.50"
			}, fixture: map[string]map[string]any{"oci_network_load_balancer_network_load_balancer": {
				"ip_addresses": []map[string]any{{"ip_address": "10.0.10.50", "ip_version": "IPV4", "is_public": false, "reserved_ip": []any{}}},
			}}, check: func(t *testing.T, calls []standin.Call, ingress []map[string]any) {
				nlb := ociNLB(t, calls)
				if nlb["is_private"] != true || nlb["assigned_private_ipv4"] != "10.0.10.50" {
					t.Errorf("internal NLB %v", nlb)
				}
				if len(ingress) != 1 || ingress[0]["ip"] != "10.0.10.50" {
					t.Errorf("internal ingress %v", ingress)
				}
			}},
			{name: "reserved-public-ip", mut: func(s *corev1.Service) { s.Spec.LoadBalancerIP = "203.0.113.10" },
				check: func(t *testing.T, calls []standin.Call, _ []map[string]any) {
					r := ociNLB(t, calls)["reserved_ips"].([]any)
					if len(r) != 1 || !strings.HasPrefix(r[0].(map[string]any)["id"].(string), "ocid1.publicip.") {
						t.Errorf("reserved_ips %v, want the reserved public IP's OCID", r)
					}
				}},
			{name: "refuse-shared-ip", shared: "web", mut: func(s *corev1.Service) { s.Annotations["tfccm.io/load-balancer-ips"] = "203.0.113.50" },
				wantErr: "tfccm.io/allow-shared-ip: every OCI network load balancer has addresses of its own"},
			{name: "refuse-sctp", mut: func(s *corev1.Service) {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "sctp", Protocol: corev1.ProtocolSCTP, Port: 9999, NodePort: 30999})
			}, wantErr: "spec.ports: OCI network load balancers forward TCP and UDP only; unsupported: 9999/SCTP."},
			{name: "refuse-source-ranges-without-vcn", mut: func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"} },
				wantErr: "spec.loadBalancerSourceRanges: enforcing source ranges needs a network security group in the VCN; set settings.vcn_id."},
			{name: "refuse-requested-ipv6", mut: func(s *corev1.Service) { s.Spec.LoadBalancerIP = "2001:db8::77" },
				wantErr: "spec.loadBalancerIP: OCI network load balancers take a requested IPv4 address only"},
			{name: "refuse-ipv6-without-node-addresses", mut: dualStack, nodes: func() []*corev1.Node {
				return []*corev1.Node{node("node-a", ociInstance+"a", "10.0.10.2", "")}
			}, wantErr: "spec.ipFamilies: IPv6 backends are the nodes' IPv6 InternalIPs; these nodes have none: node-a."},
			{name: "refuse-split-node-ports", mut: func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{
					{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, NodePort: 30053},
					{Name: "dns-udp", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30054},
				}
			}, wantErr: "spec.ports: TCP and UDP on the same port share one OCI listener and need the same nodePort; different on port 53."},
		},
		routeNodes: ociNodes,
		routeCheck: func(t *testing.T, calls []standin.Call) {
			rt := callsOf(calls, "oci_core_route_table")
			at := callsOf(calls, "oci_core_route_table_attachment")
			if len(calls) != 2 || len(rt) != 1 || len(at) != 1 {
				t.Fatalf("route calls %+v, want a route table and its attachment", calls)
			}
			if at[0].Values["route_table_id"] != rt[0].ID || at[0].Values["subnet_id"] != "ocid1.subnet.oc1.eu-frankfurt-1.aaaaaaaanodes" {
				t.Errorf("attachment %v", at[0].Values)
			}
			rules := map[string]map[string]any{}
			for _, r := range rt[0].Values["route_rules"].([]any) {
				m := r.(map[string]any)
				rules[m["destination"].(string)] = m
			}
			if len(rules) != 4 || rules["0.0.0.0/0"]["network_entity_id"] != "ocid1.internetgateway.oc1.eu-frankfurt-1.aaaaaaaaigw" {
				t.Errorf("route rules %v", rules)
			}
			for _, cidr := range []string{"10.244.1.0/24", "10.244.2.0/24", "10.244.3.0/24"} {
				if r := rules[cidr]; r == nil || !strings.HasPrefix(r["network_entity_id"].(string), "ocid1.privateip") || r["destination_type"] != "CIDR_BLOCK" {
					t.Errorf("pod route %s: %v", cidr, r)
				}
			}
		},
		routeErrs: []routeErr{
			{name: "ipv6", nodes: func() []*corev1.Node {
				return []*corev1.Node{node("node-a", ociInstance+"a", "10.0.10.2", "", "10.244.1.0/24", "fd00:10:244:1::/64")}
			}, wantErr: "IPv6 pod CIDRs cannot be routed"},
		},
		infra: "testdata/oci/infra",
		infraFixture: map[string]map[string]any{"oci_core_instance#node-c": {"state": "STOPPED"}, "oci_core_instance": {
			"state": "RUNNING", "region": "eu-frankfurt-1",
		}},
		wantInstances: func(t *testing.T, got []*instances.Instance) {
			if len(got) != 3 {
				t.Fatalf("%d instances, want 3: %+v", len(got), got)
			}
			for i, in := range got {
				name := []string{"node-a", "node-b", "node-c"}[i]
				if in.Name != name || !regexp.MustCompile(`^oci://ocid1\.instance\.`).MatchString(in.ProviderID) || in.InstanceType != "VM.Standard.E4.Flex" ||
					in.Zone != "EU-FRANKFURT-1-AD-1" || in.Region != "eu-frankfurt-1" || in.Shutdown != (name == "node-c") {
					t.Errorf("instance %d: %+v", i, in)
				}
				want := []string{"InternalIP 10.", "ExternalIP 203.0.113.", "Hostname " + name}
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
