package templates

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/workspace"
)

func TestRenderLoadBalancerGolden(t *testing.T) {
	set := fullSet(t)
	tests := []struct {
		name   string
		config string
		svc    *corev1.Service
		addrs  Addresses // from the address book (package ipam)
	}{
		{"lb-basic", baseConfig, svc(nil), Addresses{}},
		{"lb-etp-local-dualstack", baseConfig, svc(func(s *corev1.Service) {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = 31999
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
			s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "2001:db8::/32"}
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Annotations["tfccm.io/load-balancer-ip"] = "10.252.0.10"
			s.Annotations["tfccm.io/proxy-protocol"] = "true"
			s.Annotations["tfccm.io/name"] = "web-prod"
			s.Annotations["tfccm.io/vars"] = `{"size": "large", "replicas": 3}`
		}), Addresses{IPs: []netip.Addr{netip.MustParseAddr("10.252.0.10")}}},
		{"lb-variant-internal", baseConfig, svc(func(s *corev1.Service) {
			s.Annotations["tfccm.io/template"] = "internal"
			s.Annotations["tfccm.io/internal"] = "true"
			s.Annotations["tfccm.io/vars"] = `{"subnet": "dmz"}`
		}), Addresses{}},
		{"backend-kubernetes", baseConfig + `backend "kubernetes" {
  namespace     = "tfccm-state"
  secret_suffix = "prod"
  token         = "s3cr3t-token"
}`, svc(nil), Addresses{}},
		{"backend-pg", baseConfig + `backend "pg" {
  conn_str = "postgres://u:p4ss@db/tf"
}`, svc(nil), Addresses{}},
		{"backend-s3", baseConfig + `backend "s3" {
  bucket     = "states"
  key        = "clusters/prod-eu/"
  region     = "eu-west-1"
  access_key = "AKIAEXAMPLE"
  secret_key = "wJalrEXAMPLEKEY"
}`, svc(nil), Addresses{}},
		{"backend-gcs", baseConfig + `backend "gcs" {
  bucket = "states"
}`, svc(nil), Addresses{}},
		{"backend-http", baseConfig + `backend "http" {
  address        = "https://state.example/tf/"
  lock_address   = "https://state.example/lock"
  username       = "tfccm"
  password       = "hunter2"
}`, svc(nil), Addresses{}},
		{"backend-passthrough-oss", baseConfig + `backend "oss" {
  bucket = "states"
  prefix = "tfccm"
}`, svc(nil), Addresses{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, err := set.RenderLoadBalancer(testConfig(t, tt.config), tt.svc, testNodes(), tt.addrs)
			if err != nil {
				t.Fatal(err)
			}
			out := summary(ws)
			for _, secret := range []string{"s3cr3t-token", "p4ss", "AKIAEXAMPLE", "wJalrEXAMPLEKEY", "hunter2"} {
				for p, data := range ws.Files {
					if strings.Contains(string(data), secret) {
						t.Errorf("secret %q leaked into %s", secret, p)
					}
				}
				if strings.Contains(ws.Hash, secret) {
					t.Errorf("secret in hash")
				}
			}
			golden(t, tt.name+".txt", out)
		})
	}
}

func TestRenderRoutesGolden(t *testing.T) {
	set := fullSet(t)
	routes := RoutesFromNodes(testNodes())
	routes = append(routes, Route{Name: "blackhole/10.244.99.0/24", DestinationCIDR: "10.244.99.0/24", Blackhole: true})
	ws, err := set.RenderRoutes(testConfig(t, baseConfig), routes)
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) != 5 {
		t.Fatalf("RoutesFromNodes gave %d routes, want 4 (+1 blackhole)", len(routes)-1)
	}
	golden(t, "routes.txt", summary(ws))
}

// TestRenderLocalSetGolden renders the built-in local set, when it is
// complete, with the settings the local cloud's infra outputs.
func TestRenderLocalSetGolden(t *testing.T) {
	set, err := LoadBuiltin("local")
	if err != nil {
		t.Fatalf("built-in local set: %v", err)
	}
	cfg := testConfig(t, `
cluster_name = "demo"
work_dir     = "/var/lib/tfccm"
load_balancer {
  settings = { state_dir = "/run/tfccm-local", cloud_netns = "tfccm-cloud", vip_pool = "10.252.0.0/24" }
}
routes {
  settings = { cloud_netns = "tfccm-cloud" }
}
`)
	ws, err := set.RenderLoadBalancer(cfg, svc(nil), testNodes(), Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "local-loadbalancer.txt", summarize(ws, false))
	for name, mode := range ws.Modes {
		if mode != 0o644 {
			t.Errorf("%s mode %o: the local set (on the lbhost provider) has no scripts", name, mode)
		}
	}
	rws, err := set.RenderRoutes(cfg, RoutesFromNodes(testNodes()))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "local-routes.txt", summarize(rws, false))
	if _, _, err := set.InstancesMapping(); err != nil {
		t.Error(err)
	}
}

func TestRenderDeterministic(t *testing.T) {
	set := fullSet(t)
	cfg := testConfig(t, baseConfig)
	a, err := set.RenderLoadBalancer(cfg, svc(nil), testNodes(), Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	// Same objects, nodes in another order and map insertion order shuffled.
	nodes := testNodes()
	nodes[0], nodes[2] = nodes[2], nodes[0]
	s := svc(nil)
	s.Annotations = map[string]string{}
	for k, v := range svc(nil).Annotations {
		s.Annotations[k] = v
	}
	b, err := set.RenderLoadBalancer(cfg, s, nodes, Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash != b.Hash || string(a.Files[TfvarsFile]) != string(b.Files[TfvarsFile]) {
		t.Fatal("same objects rendered differently")
	}
	// A real change changes the hash.
	c, err := set.RenderLoadBalancer(cfg, svc(func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 }), testNodes(), Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Hash == a.Hash {
		t.Fatal("changed port, same hash")
	}
}

func TestRenderErrors(t *testing.T) {
	set := fullSet(t)
	tests := []struct {
		name   string
		config string
		svc    *corev1.Service
		want   string
	}{
		{"unknown variant", baseConfig, svc(func(s *corev1.Service) { s.Annotations["tfccm.io/template"] = "public" }),
			`annotation tfccm.io/template: variant "public" is not installed (installed: default, internal)`},
		{"traversal variant", baseConfig, svc(func(s *corev1.Service) { s.Annotations["tfccm.io/template"] = "../../etc" }),
			`annotation tfccm.io/template: "../../etc" is not a valid template variant name`},
		{"unknown vars key", strings.Replace(baseConfig, `"subnet"]`, `"subnet", "colour"]`, 1), svc(func(s *corev1.Service) { s.Annotations["tfccm.io/vars"] = `{"colour": "red"}` }),
			`annotation tfccm.io/vars: unknown key "colour" (template loadbalancer accepts: replicas, size, vip_pool)`},
		{"wrong vars type", baseConfig, svc(func(s *corev1.Service) { s.Annotations["tfccm.io/vars"] = `{"replicas": "many"}` }),
			`annotation tfccm.io/vars: key "replicas": want number: a number is required`},
		{"wrong vars type object", baseConfig, svc(func(s *corev1.Service) { s.Annotations["tfccm.io/vars"] = `{"size": {"a": 1}}` }),
			`annotation tfccm.io/vars: key "size": want string`},
		{"vars not json", baseConfig, svc(func(s *corev1.Service) { s.Annotations["tfccm.io/vars"] = `size=large` }),
			`annotation tfccm.io/vars: not valid JSON`},
		{"missing setting", `cluster_name = "c"`, svc(nil),
			`settings: template loadbalancer requires key "vip_pool"; set it in load_balancer.settings of the cloud config`},
		{"wrong cluster setting type", `
cluster_name = "c"
load_balancer {
  settings = { vip_pool = ["a"] }
}`, svc(nil), `load_balancer.settings.vip_pool in the cloud config: want string`},
		{"bad name", baseConfig, svc(func(s *corev1.Service) { s.Annotations["tfccm.io/name"] = "Web_Prod" }),
			`annotation tfccm.io/name: "Web_Prod" is not a valid load balancer name`},
		{"unknown annotation", baseConfig, svc(func(s *corev1.Service) { s.Annotations["tfccm.io/proxy_protocol"] = "true" }),
			`unknown annotation tfccm.io/proxy_protocol`},
		{"bad bool", baseConfig, svc(func(s *corev1.Service) { s.Annotations["tfccm.io/internal"] = "sure" }),
			`annotation tfccm.io/internal: "sure" is not a boolean`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := set.RenderLoadBalancer(testConfig(t, tt.config), tt.svc, testNodes(), Addresses{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant containing %q", err, tt.want)
			}
		})
	}
}

// TestRenderInstancesOnlySets: a built-in set without load balancer or
// routes modules (proxmox, vsphere) renders no workspace; the error says
// why and what to do, and it is what the Service's Event carries.
func TestRenderInstancesOnlySets(t *testing.T) {
	for _, name := range []string{"proxmox", "vsphere"} {
		t.Run(name, func(t *testing.T) {
			set, err := LoadBuiltin(name)
			if err != nil {
				t.Fatal(err)
			}
			if v := set.Variants(); len(v) != 0 {
				t.Fatalf("variants %v, want none", v)
			}
			if _, _, err := set.InstancesMapping(); err != nil {
				t.Fatalf("instances.hcl: %v", err)
			}
			cfg := testConfig(t, `cluster_name = "c"`)
			_, err = set.RenderLoadBalancer(cfg, svc(nil), testNodes(), Addresses{})
			if err == nil || !strings.Contains(err.Error(), "the template set has no load balancer module (its cloud has no load balancer product): add one with override_dir") {
				t.Errorf("load balancer: err = %v", err)
			}
			_, err = set.RenderRoutes(cfg, []Route{{Name: "n/10.0.0.0/24", DestinationCIDR: "10.0.0.0/24", TargetNode: "n"}})
			if err == nil || !strings.Contains(err.Error(), "the template set has no routes module") {
				t.Errorf("routes: err = %v", err)
			}
		})
	}
}

func TestRenderRoutesErrors(t *testing.T) {
	set := fullSet(t)
	cfg := testConfig(t, baseConfig)
	tests := []struct {
		name   string
		routes []Route
		want   string
	}{
		{"bad cidr", []Route{{Name: "n/x", DestinationCIDR: "10.0.0.0/33", TargetNode: "n"}}, `route "n/x": destination "10.0.0.0/33" is not a CIDR`},
		{"dup", []Route{{Name: "a", DestinationCIDR: "10.0.0.0/24", TargetNode: "n"}, {Name: "a", DestinationCIDR: "10.0.1.0/24", TargetNode: "n"}}, `route "a" appears twice`},
		{"no target", []Route{{Name: "a", DestinationCIDR: "10.0.0.0/24"}}, `route "a" has no target node`},
		{"no name", []Route{{DestinationCIDR: "10.0.0.0/24", TargetNode: "n"}}, `has no name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := set.RenderRoutes(cfg, tt.routes)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want containing %q", err, tt.want)
			}
		})
	}
}

func TestLoadBalancerName(t *testing.T) {
	cfg := testConfig(t, `cluster_name = "a-very-long-cluster-name-that-goes-on-and-on"`)
	s := svc(nil)
	n := LoadBalancerName(cfg, s)
	if len(n) > 32 || !strings.HasPrefix(n, "a-very-long-cluster-") || strings.Contains(n, "--") {
		t.Fatalf("name %q", n)
	}
	if n != LoadBalancerName(cfg, svc(nil)) {
		t.Fatal("not deterministic")
	}
	other := svc(func(s *corev1.Service) { s.UID = "other" })
	if LoadBalancerName(cfg, other) == n {
		t.Fatal("different UIDs, same name")
	}
	s.Annotations["tfccm.io/name"] = "web-prod"
	if got := LoadBalancerName(cfg, s); got != "web-prod" {
		t.Fatalf("annotation ignored: %q", got)
	}
	if LoadBalancerWorkspaceName(cfg, s) != "lb-"+n {
		t.Fatalf("workspace name %q must stay keyed by UID", LoadBalancerWorkspaceName(cfg, s))
	}
	s.Annotations["tfccm.io/name"] = "../x"
	if got := LoadBalancerName(cfg, s); got != n {
		t.Fatalf("invalid annotation used: %q", got)
	}
	for _, c := range []string{"a", "abc-def", strings.Repeat("x", 63)} {
		n := defaultLBName(c, "uid")
		if len(n) > 32 || !lbNameOK(n) {
			t.Errorf("defaultLBName(%q) = %q", c, n)
		}
	}
	if node, cidr, ok := strings.Cut(RouteName("node-a", "fd00::/64"), "/"); !ok || node != "node-a" || cidr != "fd00::/64" {
		t.Fatal("route name does not split back")
	}
}

func lbNameOK(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return s != "" && s[0] >= 'a' && s[0] <= 'z' && !strings.HasSuffix(s, "-")
}

func TestWriteDir(t *testing.T) {
	set := fullSet(t)
	cfg := testConfig(t, baseConfig)
	ws, err := set.RenderLoadBalancer(cfg, svc(nil), testNodes(), Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Something the engine keeps in the dir must survive.
	if err := os.MkdirAll(dir+"/.terraform", 0o755); err != nil {
		t.Fatal(err)
	}
	ws.Files["stale/old.tf"] = []byte("# old\n")
	ws.Modes["stale/old.tf"] = 0o644
	if err := ws.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	delete(ws.Files, "stale/old.tf")
	delete(ws.Modes, "stale/old.tf")
	if err := ws.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	got, err := workspace.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Files) != len(ws.Files) {
		t.Fatalf("read back %d files, want %d", len(got.Files), len(ws.Files))
	}
	for p, data := range ws.Files {
		if string(got.Files[p]) != string(data) {
			t.Errorf("%s differs", p)
		}
		st, err := os.Stat(dir + "/" + p)
		if err != nil || st.Mode().Perm() != ws.Modes[p] {
			t.Errorf("%s mode %v, want %o", p, st.Mode(), ws.Modes[p])
		}
	}
	if _, err := os.Stat(dir + "/stale"); !os.IsNotExist(err) {
		t.Errorf("stale dir not removed: %v", err)
	}
	if _, err := os.Stat(dir + "/.terraform"); err != nil {
		t.Errorf(".terraform removed: %v", err)
	}
	if ws.Modes["scripts/hook.sh"] != 0o755 {
		t.Errorf("hook.sh mode %o", ws.Modes["scripts/hook.sh"])
	}
	bad := &workspace.Spec{Name: "x", Files: map[string][]byte{"../escape": nil}, Modes: map[string]os.FileMode{}}
	if err := bad.WriteDir(dir); err == nil {
		t.Error("path escaping the dir accepted")
	}
}

// BenchmarkRenderLoadBalancer500Nodes measures one render over 500 nodes
// (the controller renders on every node-set change of every Service).
func BenchmarkRenderLoadBalancer500Nodes(b *testing.B) {
	set := fullSet(b)
	cfg := testConfig(b, baseConfig)
	var nodes []*corev1.Node
	for i := 0; i < 500; i++ {
		nodes = append(nodes, node(fmt.Sprintf("node-%03d", i), fmt.Sprintf("10.250.%d.%d", i/250, i%250+1), "zone-a"))
	}
	s := svc(nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := set.RenderLoadBalancer(cfg, s, nodes, Addresses{}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBackendAttributes(t *testing.T) {
	set := fullSet(t)
	cfg := testConfig(t, baseConfig+`backend "kubernetes" {
  namespace = "tfccm-state"
  token     = "s3cr3t"
}`)
	ws, err := set.RenderLoadBalancer(cfg, svc(nil), nil, Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	if ws.Backend.Type != "kubernetes" || ws.Backend.Attributes["secret_suffix"].AsString() != ws.Name ||
		ws.Backend.Attributes["namespace"].AsString() != "tfccm-state" {
		t.Fatalf("backend %s %#v", ws.Backend.Type, ws.Backend.Attributes)
	}
	// Secrets stay out of the files but reach the engine.
	if ws.BackendConfig["token"] != "s3cr3t" || ws.Backend.Attributes["token"].AsString() != "s3cr3t" ||
		strings.Contains(string(ws.Files[BackendFile]), "s3cr3t") {
		t.Fatal("secret attribute handling")
	}
}
