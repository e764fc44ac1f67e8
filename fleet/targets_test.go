package fleet

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
)

// TestServedFollowsTheClassRule: the fleet plan takes the Services the CCM
// serves (config.ServesClass), not only class-less ones.
func TestServedFollowsTheClassRule(t *testing.T) {
	ours, other := "tfccm.io/terraform", "metallb.io/metallb"
	off := false
	svc := func(class *string, typ corev1.ServiceType, deleting bool) *corev1.Service {
		s := &corev1.Service{Spec: corev1.ServiceSpec{Type: typ, LoadBalancerClass: class}}
		if deleting {
			now := metav1.Now()
			s.DeletionTimestamp = &now
		}
		return s
	}
	lb := corev1.ServiceTypeLoadBalancer
	for _, tc := range []struct {
		name string
		cfg  config.Config
		svc  *corev1.Service
		want bool
	}{
		{"class-less", config.Config{LoadBalancerClass: ours}, svc(nil, lb, false), true},
		{"class-less, serve_classless off", config.Config{LoadBalancerClass: ours, ServeClassless: &off}, svc(nil, lb, false), false},
		{"tfccm's class", config.Config{LoadBalancerClass: ours, ServeClassless: &off}, svc(&ours, lb, false), true},
		{"another class", config.Config{LoadBalancerClass: ours}, svc(&other, lb, false), false},
		{"not a load balancer", config.Config{LoadBalancerClass: ours}, svc(nil, corev1.ServiceTypeNodePort, false), false},
		{"being deleted", config.Config{LoadBalancerClass: ours}, svc(nil, lb, true), false},
	} {
		if got := served(&tc.cfg, tc.svc); got != tc.want {
			t.Errorf("%s: served = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestTargetsRefuseServiceVars: the fleet plan (tfccm plan) renders through
// the controller's one render entry, so a Service whose tfccm.io/vars sets
// a key load_balancer.service_vars does not allow is a row with the
// refusal and no workspace to plan, beside a Service that renders.
func TestTargetsRefuseServiceVars(t *testing.T) {
	cfg, err := config.Parse([]byte(`cluster_name = "c"
load_balancer {
  settings = { state_dir = "/var/lib/cloud", cloud_netns = "tfccm-cloud", vip_pool = "10.252.0.0/24" }
}`), "cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	set, err := templates.LoadBuiltin("local")
	if err != nil {
		t.Fatal(err)
	}
	svc := func(name, vars string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID(name + "-uid"), Annotations: map[string]string{}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
		if vars != "" {
			s.Annotations["tfccm.io/vars"] = vars
		}
		return s
	}
	targets := Targets(cfg, set, []*corev1.Service{svc("evil", `{"vip_pool": "10.250.0.0/24"}`), svc("web", "")}, nil, nil)
	if len(targets) != 2 {
		t.Fatalf("%d targets, want 2", len(targets))
	}
	evil, web := targets[0], targets[1]
	want := `render: annotation tfccm.io/vars: key "vip_pool" is not a setting a Service may set (load_balancer.service_vars of the cloud config allows none)`
	if evil.Err == nil || !strings.Contains(evil.Err.Error(), want) || evil.Spec != nil {
		t.Errorf("shop/evil: err %v, spec %v; want %q and no workspace", evil.Err, evil.Spec != nil, want)
	}
	if web.Err != nil || web.Spec == nil {
		t.Errorf("shop/web: err %v, spec %v; want a workspace", web.Err, web.Spec != nil)
	}
}

// TestTargetsPeering: the fleet plan has the BGP peering workspace exactly
// when the controller applies one (the set's bgp module, settings with a
// bgp block), and a settings error as that target's error.
func TestTargetsPeering(t *testing.T) {
	set, err := templates.LoadBuiltin("baremetal")
	if err != nil {
		t.Fatal(err)
	}
	hosts := `hosts = { lb-a = { address = "10.0.0.2", host_key = "ssh-ed25519 AAAA" } }, vip_pool = "10.0.0.0/24", ssh_agent_socket = "/run/a"`
	for _, tc := range []struct {
		name, settings string
		want           bool
		wantErr        string
	}{
		{"bgp", hosts + `, bgp = { asn = 64512 }`, true, ""},
		{"no bgp", hosts, false, ""},
		{"bad bgp", hosts + `, bgp = { asn = "x" }`, true, "load_balancer.settings.bgp"},
	} {
		cfg, err := config.Parse([]byte("cluster_name = \"c\"\ntemplate_set = \"baremetal\"\nload_balancer {\n  settings = { "+tc.settings+" }\n}\n"), "cloud.hcl")
		if err != nil {
			t.Fatal(err)
		}
		var got *Target
		for _, tg := range Targets(cfg, set, nil, nil, nil) {
			if tg.Peering {
				got = &tg
			}
		}
		if (got != nil) != tc.want {
			t.Fatalf("%s: peering target %v, want %t", tc.name, got, tc.want)
		}
		if got == nil {
			continue
		}
		if got.ID() != templates.PeeringWorkspaceName {
			t.Errorf("%s: ID %q", tc.name, got.ID())
		}
		if tc.wantErr == "" && (got.Err != nil || got.Spec == nil || got.Spec.Name != templates.PeeringWorkspaceName) {
			t.Errorf("%s: err %v spec %v", tc.name, got.Err, got.Spec)
		}
		if tc.wantErr != "" && (got.Err == nil || !strings.Contains(got.Err.Error(), tc.wantErr)) {
			t.Errorf("%s: err %v, want %q", tc.name, got.Err, tc.wantErr)
		}
	}
}
