package templates

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestHostHealthPrecedence: the baremetal and local sets' hosts health
// modules read their own load balancer modules; a set without one reads
// none; a load balancer module from an override directory is not read by
// the built-in hosts health module.
func TestHostHealthPrecedence(t *testing.T) {
	for _, tc := range []struct {
		set  string
		key  string
		want bool
	}{
		{"baremetal", "loadbalancer", true},
		{"baremetal", "loadbalancer.l4", true},
		{"baremetal", "loadbalancer.bgp", true},
		{"local", "loadbalancer", true},
		{"local", "routes", false},
		{"nodes", "loadbalancer", false},
		{"hcloud", "loadbalancer", false},
	} {
		s, err := LoadBuiltin(tc.set)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.HostHealthReads(tc.key); got != tc.want {
			t.Errorf("%s: HostHealthReads(%s) = %t, want %t", tc.set, tc.key, got, tc.want)
		}
	}
	base, err := LoadBuiltin("baremetal")
	if err != nil {
		t.Fatal(err)
	}
	lb, _ := base.Module("loadbalancer")
	over, diags := buildSet(base, &tree{modules: map[string][]File{"loadbalancer": lb.Files}}, "/etc/tfccm/templates")
	if diags.HasErrors() {
		t.Fatal(FormatDiagnostics(diags))
	}
	if over.HostHealthReads("loadbalancer") || !over.HostHealthReads("loadbalancer.l4") {
		t.Errorf("override: HostHealthReads(loadbalancer) = %t (want false), (loadbalancer.l4) = %t (want true)",
			over.HostHealthReads("loadbalancer"), over.HostHealthReads("loadbalancer.l4"))
	}
	s := svc(func(s *corev1.Service) { s.Annotations["tfccm.io/template"] = "l4" })
	if key, ok := base.HostHealthModule(s); !ok || key != "loadbalancer.l4" {
		t.Errorf("HostHealthModule(l4 Service) = %q, %t", key, ok)
	}
}

// TestRenderHostHealth: a baremetal load balancer's applied inputs read
// back become its entry of the hosts health module's inputs, with the
// cluster's settings and no backend file.
func TestRenderHostHealth(t *testing.T) {
	cfg := testConfig(t, `cluster_name = "c"
load_balancer {
  settings = {
    hosts = { lb-a = { address = "10.0.0.2", host_key = "ssh-ed25519 AAAA" } }
    vip_pool = "10.0.0.0/24", vrrp_interface = "eth0", ssh_agent_socket = "/run/agent"
  }
}`)
	set, err := LoadBuiltin("baremetal")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := set.RenderLoadBalancer(cfg, svc(nil), testNodes(), Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	id, service, err := ReadAppliedInputs(ws.Files[TfvarsFile])
	if err != nil {
		t.Fatal(err)
	}
	if id != LoadBalancerID(cfg, svc(nil)) {
		t.Errorf("id %q, want %q", id, LoadBalancerID(cfg, svc(nil)))
	}
	spec, err := set.RenderHostHealth(cfg, []HostHealthLB{{ID: id, Module: "loadbalancer", Service: service}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := spec.Files[BackendFile]; ok || spec.Name != HostHealthWorkspace {
		t.Errorf("spec %s with files %v: want %s, no backend", spec.Name, sortedKeys(spec.Files), HostHealthWorkspace)
	}
	inputs := string(spec.Files[TfvarsFile])
	for _, want := range []string{`load_balancers = {`, id + ` = {`, `module = "loadbalancer"`, `ip_families      = ["IPv4"]`, `lb-a = {`, `cluster_name = "c"`} {
		if !strings.Contains(inputs, want) {
			t.Errorf("inputs lack %q:\n%s", want, inputs)
		}
	}
	if strings.Contains(inputs, "node_port") {
		t.Errorf("inputs carry more of the service than the module declares:\n%s", inputs)
	}
	if _, _, err := ReadAppliedInputs([]byte(`service = {}`)); err == nil {
		t.Error("inputs without load_balancer_id accepted")
	}
}

func TestDecodeHostHealth(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      map[string][]string // id -> its outputs' names
		err       string
	}{
		{"two", `{"a":{"backends":[],"vip_holders":null,"hosts":{"lb-a":true}},"b":{"backends":[]}}`,
			map[string][]string{"a": {"backends", "hosts"}, "b": {"backends"}}, ""},
		{"none", `{}`, map[string][]string{}, ""},
		{"no backends", `{"a":{"hosts":{}}}`, nil, "has no `backends`"},
		{"not a map", `[]`, nil, "not a map of load balancer id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeHostHealth(map[string]json.RawMessage{HostHealthOutput: json.RawMessage(tc.raw)})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names := map[string][]string{}
			for id, outs := range got {
				names[id] = sortedKeys(outs)
			}
			if !reflect.DeepEqual(names, tc.want) {
				t.Errorf("got %v, want %v", names, tc.want)
			}
		})
	}
	if _, err := DecodeHostHealth(map[string]json.RawMessage{}); err == nil {
		t.Error("missing output accepted")
	}
}
