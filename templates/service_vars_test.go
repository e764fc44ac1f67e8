package templates

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"
)

// TestServiceVarsAllowList: tfccm.io/vars sets only the settings keys the
// admin lists in load_balancer.service_vars; any other key is refused
// before its value is read, naming every refused key and the list, and
// nothing renders.
func TestServiceVarsAllowList(t *testing.T) {
	const settings = `settings = { vip_pool = "10.252.0.0/24", size = "small" }`
	cfgWith := func(allow string) string {
		c := "cluster_name = \"c\"\nload_balancer {\n  " + settings + "\n"
		if allow != "" {
			c += "  service_vars = " + allow + "\n"
		}
		return c + "}\n"
	}
	tests := []struct {
		name, allow, vars string
		want              string            // error, "" for none
		settings          map[string]string // rendered settings checked, when no error
	}{
		{name: "no annotation, nothing allowed", vars: "", settings: map[string]string{"vip_pool": "10.252.0.0/24", "size": "small"}},
		{name: "empty object, nothing allowed", vars: `{}`, settings: map[string]string{"vip_pool": "10.252.0.0/24"}},
		{name: "nothing allowed by default", vars: `{"size": "large"}`,
			want: `annotation tfccm.io/vars: key "size" is not a setting a Service may set (load_balancer.service_vars of the cloud config allows none); nothing is applied`},
		{name: "an allowed key", allow: `["size"]`, vars: `{"size": "large"}`, settings: map[string]string{"size": "large", "vip_pool": "10.252.0.0/24"}},
		{name: "the admin's pool is not the tenant's", allow: `["size"]`, vars: `{"vip_pool": "10.250.0.0/24"}`,
			want: `annotation tfccm.io/vars: key "vip_pool" is not a setting a Service may set (load_balancer.service_vars of the cloud config allows: size)`},
		{name: "every refused key named", allow: `["size", "replicas"]`, vars: `{"size": "large", "vip_pool": "10.250.0.0/24", "hosts": {}}`,
			want: `annotation tfccm.io/vars: keys "hosts", "vip_pool" are not a setting a Service may set (load_balancer.service_vars of the cloud config allows: size, replicas)`},
		{name: "refused before its value is read", vars: `{"keepalived_pid_file": ["/etc/shadow"]}`,
			want: `key "keepalived_pid_file" is not a setting a Service may set`},
		{name: "an odd key is quoted", vars: `{"a\nb": 1}`, want: `key "a\nb" is not a setting`},
		{name: "allowed but not the template's", allow: `["colour"]`, vars: `{"colour": "red"}`,
			want: `annotation tfccm.io/vars: unknown key "colour" (template loadbalancer accepts: replicas, size, vip_pool)`},
		{name: "allowed, converted to the declared type", allow: `["size"]`, vars: `{"size": 3}`, settings: map[string]string{"size": "3"}},
		{name: "a key the admin allows replaces the admin's value", allow: `["vip_pool"]`, vars: `{"vip_pool": "10.9.0.0/24"}`, settings: map[string]string{"vip_pool": "10.9.0.0/24"}},
	}
	set := fullSet(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := svc(func(s *corev1.Service) {
				if tt.vars != "" {
					s.Annotations["tfccm.io/vars"] = tt.vars
				}
			})
			r, err := set.renderLoadBalancer(testConfig(t, cfgWith(tt.allow)), s, testNodes(), Addresses{})
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v\nwant containing %q", err, tt.want)
				}
				if r != nil {
					t.Fatal("a refused Service rendered a workspace")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := r.inputs[SettingsVar]
			for k, want := range tt.settings {
				if v := got.GetAttr(k); v.IsNull() || v.Type() != cty.String || v.AsString() != want {
					t.Errorf("settings.%s = %#v, want %q", k, v, want)
				}
			}
		})
	}
}

// TestServiceVarsBuiltinSets: on the local and baremetal sets, a Service
// that sets an admin setting (the VIP pool, the LB hosts, a host's config
// directory or keepalived's pid file) is refused with the default
// allow-list, so no workspace the tenant shaped is ever planned.
func TestServiceVarsBuiltinSets(t *testing.T) {
	configs := map[string]string{
		"local": `cluster_name = "c"
load_balancer {
  settings = { state_dir = "/var/lib/cloud", cloud_netns = "tfccm-cloud", vip_pool = "10.252.0.0/24" }
}`,
		"baremetal": `cluster_name = "c"
load_balancer {
  settings = {
    hosts = { lb-a = { address = "10.0.0.2", host_key = "ssh-ed25519 AAAA" } }
    vip_pool = "10.0.0.0/24", vrrp_interface = "eth0", ssh_agent_socket = "/run/agent"
  }
  service_vars = ["advert_int"]
}`,
	}
	overrides := []string{
		`{"vip_pool": "10.250.0.0/24"}`,
		`{"hosts": {"evil": {"address": "10.250.0.1", "host_key": "ssh-ed25519 AAAA"}}}`,
		`{"config_dir": "/etc"}`,
		`{"keepalived_pid_file": "/etc/shadow"}`,
	}
	for name, cfg := range configs {
		set, err := LoadBuiltin(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "baremetal" {
			s := svc(func(s *corev1.Service) { s.Annotations["tfccm.io/vars"] = `{"advert_int": 2}` })
			if _, err := set.RenderLoadBalancer(testConfig(t, cfg), s, testNodes(), Addresses{}); err != nil {
				t.Errorf("baremetal with an allowed advert_int: %v", err)
			}
		}
		for _, vars := range overrides {
			t.Run(name+"/"+vars, func(t *testing.T) {
				s := svc(func(s *corev1.Service) { s.Annotations["tfccm.io/vars"] = vars })
				_, err := set.RenderLoadBalancer(testConfig(t, cfg), s, testNodes(), Addresses{})
				if err == nil || !strings.Contains(err.Error(), "is not a setting a Service may set") {
					t.Fatalf("err = %v, want the key refused", err)
				}
			})
		}
	}
}
