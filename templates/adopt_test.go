package templates

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/workspace"
)

// TestAdoptAllowList: tfccm.io/adopt renders the adopt input only for ids
// the admin allows the Service's namespace; a tenant naming another
// namespace's or the platform's load balancer, a malformed value, or a
// set that cannot adopt is refused naming the problem, and nothing
// renders. The id reaches the template as a variable value in the tfvars
// (escaped), never as HCL of its own.
func TestAdoptAllowList(t *testing.T) {
	cfg, hcloud := allowListConfig, loadHcloud(t)
	tests := []struct {
		name, namespace, value string
		set                    *Set
		want                   string // error substring; "" renders
		tfvars                 string // substring of the rendered tfvars
	}{
		{name: "allowed id", namespace: "shop", value: "4711", tfvars: "adopt = {\n  id = \"4711\"\n}"},
		{name: "allowed id as JSON", namespace: "shop", value: `{"id": "4711"}`, tfvars: `id = "4711"`},
		{name: "another namespace's load balancer", namespace: "shop", value: "4712",
			want: `annotation tfccm.io/adopt: namespace shop may not adopt "4712": the cluster admin allows a namespace's Services to adopt only the ids listed in load_balancer { adopt "shop" { ids = [...] } }`},
		{name: "a namespace without an allow-list", namespace: "dev", value: "4711", want: `namespace dev may not adopt "4711"`},
		{name: "a part not allowed", namespace: "shop", value: `{"id": "4711", "listener.tcp-80": "4712"}`, want: `namespace shop may not adopt "4712"`},
		{name: "HCL in the value", namespace: "shop", value: `4711" } resource "x" "y" { a = "`, want: `annotation tfccm.io/adopt: "4711\" } resource`},
		{name: "interpolation in the value", namespace: "shop", value: "${file(\"/etc/shadow\")}", want: "is not a load balancer id"},
		{name: "JSON without id", namespace: "shop", value: `{"listener.tcp-80": "1"}`, want: `has no "id"`},
		{name: "JSON not of strings", namespace: "shop", value: `{"id": 4711}`, want: "not a JSON object of strings"},
		{name: "bad part name", namespace: "shop", value: `{"id": "4711", "Listener 80": "1"}`, want: `part name "Listener 80" is not a part name`},
		{name: "a set that cannot adopt", namespace: "shop", value: "4711", set: fullSet(t), want: "template loadbalancer cannot adopt a load balancer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := tt.set
			if set == nil {
				set = hcloud
			}
			ws := renderAnnotated(t, set, cfg, tt.namespace, "tfccm.io/adopt", tt.value, tt.want)
			if ws == nil {
				return
			}
			if !ws.Adopts {
				t.Error("the workspace is not marked as adopting")
			}
			if got := string(ws.Files[TfvarsFile]); !strings.Contains(got, tt.tfvars) {
				t.Errorf("tfvars lack %q:\n%s", tt.tfvars, got)
			}
		})
	}
	// Without the annotation nothing is adopted and no adopt input is
	// written (the template's default null applies).
	ws, err := hcloud.RenderLoadBalancer(testConfig(t, cfg), svc(nil), testNodes(), Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	if ws.Adopts || strings.Contains(string(ws.Files[TfvarsFile]), "\nadopt") {
		t.Errorf("a Service without tfccm.io/adopt adopts:\n%s", ws.Files[TfvarsFile])
	}
}

// TestRetainAllowList: tfccm.io/retain-on-delete marks the workspace to be
// forgotten at delete only in a namespace the admin lets keep load
// balancers (adopt "NS" { retain = true }, ids optional); a tenant asking
// for it anywhere else is refused naming the allow-list, and nothing
// renders. False or unset retains nothing; a value that is not a bool is
// refused.
func TestRetainAllowList(t *testing.T) {
	cfg, hcloud := allowListConfig, loadHcloud(t)
	tests := []struct {
		name, namespace, value string
		want                   string // error substring; "" renders
		retain                 bool
	}{
		{name: "allowed", namespace: "shop", value: "true", retain: true},
		{name: "false", namespace: "shop", value: "false"},
		{name: "false where not allowed", namespace: "blog", value: "false"},
		{name: "adopting namespace without retain", namespace: "blog", value: "true",
			want: `annotation tfccm.io/retain-on-delete: namespace blog may not keep its load balancers when a Service is deleted: the cluster admin allows it with load_balancer { adopt "blog" { retain = true } }`},
		{name: "namespace without a block", namespace: "dev", value: "true", want: "namespace dev may not keep"},
		{name: "not a bool", namespace: "shop", value: "yes please", want: "tfccm.io/retain-on-delete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := renderAnnotated(t, hcloud, cfg, tt.namespace, "tfccm.io/retain-on-delete", tt.value, tt.want)
			if ws != nil && ws.Retain != tt.retain {
				t.Errorf("Retain = %v, want %v", ws.Retain, tt.retain)
			}
		})
	}
}

// renderAnnotated renders a Service of namespace with annotation key set
// to value. When want is set the render must fail with an error holding it
// and render nothing (then it returns nil).
func renderAnnotated(t *testing.T, set *Set, cfg, namespace, key, value, want string) *workspace.Spec {
	t.Helper()
	s := svc(func(s *corev1.Service) {
		s.Namespace = namespace
		s.Annotations[key] = value
	})
	ws, err := set.RenderLoadBalancer(testConfig(t, cfg), s, testNodes(), Addresses{})
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v\nwant containing %q", err, want)
		}
		if ws != nil {
			t.Fatalf("a Service refused for %s rendered a workspace", key)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// allowListConfig lets shop adopt 4711 and keep its load balancers, and
// blog adopt 4712.
const allowListConfig = `cluster_name = "c"
load_balancer {
  settings = { location = "fsn1" }
  adopt "shop" {
    ids    = ["4711"]
    retain = true
  }
  adopt "blog" {
    ids = ["4712"]
  }
}`

func loadHcloud(t *testing.T) *Set {
	t.Helper()
	set, err := LoadBuiltin("hcloud")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestAdoptBaremetalAllowList: the baremetal set adopts hand-made
// keepalived instances by "keepalived:<instance>", only those the admin
// lists for the Service's namespace; a tenant naming another team's
// instance is refused at render, nothing planned.
func TestAdoptBaremetalAllowList(t *testing.T) {
	set, err := LoadBuiltin("baremetal")
	if err != nil {
		t.Fatal(err)
	}
	const cfg = `cluster_name = "c"
load_balancer {
  settings = {
    hosts = { lb-a = { address = "10.0.0.2", host_key = "ssh-ed25519 AAAA" } }
    vip_pool = "10.0.0.0/24", vrrp_interface = "eth0", ssh_agent_socket = "/run/agent"
  }
  adopt "shop" {
    ids = ["keepalived:VI_WEB"]
  }
  adopt "blog" {
    ids = ["keepalived:VI_BLOG"]
  }
}`
	for _, tt := range []struct{ name, namespace, value, want string }{
		{name: "the namespace's instance", namespace: "shop", value: "keepalived:VI_WEB"},
		{name: "another team's instance", namespace: "shop", value: "keepalived:VI_BLOG", want: `namespace shop may not adopt "keepalived:VI_BLOG"`},
		{name: "an instance not listed", namespace: "dev", value: "keepalived:VI_WEB", want: `namespace dev may not adopt "keepalived:VI_WEB"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := renderAnnotated(t, set, cfg, tt.namespace, "tfccm.io/adopt", tt.value, tt.want)
			if ws == nil {
				return
			}
			if got := string(ws.Files[TfvarsFile]); !ws.Adopts || !strings.Contains(got, `id = "keepalived:VI_WEB"`) {
				t.Errorf("adopts %t, tfvars:\n%s", ws.Adopts, got)
			}
			if _, ok := ws.Files["adopt.tf"]; !ok {
				t.Error("the workspace has no adopt.tf")
			}
		})
	}
}
