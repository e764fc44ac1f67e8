package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/fleet"
	"github.com/tfccm/tfccm/internal/manifest"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/standin"
)

// fleetDump is a cluster dump as `kubectl get services,nodes -A -o yaml`
// prints it: three Services tfccm serves (two with
// externalTrafficPolicy: Local), one of another load balancer class, a
// ClusterIP Service, and a node excluded from load balancers.
const fleetDump = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: { name: web, namespace: shop, uid: 0b6c7a52-3d0e-4f6b-9d55-2c1f0e8a7b10 }
  spec: { type: LoadBalancer, externalTrafficPolicy: Cluster, ports: [{ name: http, protocol: TCP, port: 80, nodePort: 30080 }] }
- apiVersion: v1
  kind: Service
  metadata: { name: api, namespace: shop, uid: 1c7d8b63-4e1f-4a7c-8e66-3d2f1a9b8c21 }
  spec: { type: LoadBalancer, externalTrafficPolicy: Local, healthCheckNodePort: 32001, ports: [{ name: http, protocol: TCP, port: 80, nodePort: 30081 }] }
- apiVersion: v1
  kind: Service
  metadata: { name: db, namespace: blog, uid: 2d8e9c74-5f20-4b8d-9f77-4e3a2b0c9d32 }
  spec: { type: LoadBalancer, externalTrafficPolicy: Local, healthCheckNodePort: 32002, ports: [{ name: pg, protocol: TCP, port: 5432, nodePort: 30432 }] }
- apiVersion: v1
  kind: Service
  metadata: { name: other, namespace: shop, uid: 3e9fad85-6031-4c9e-8088-5f4b3c1d0e43 }
  spec: { type: LoadBalancer, loadBalancerClass: example.com/other, ports: [{ protocol: TCP, port: 80, nodePort: 30082 }] }
- apiVersion: v1
  kind: Service
  metadata: { name: internal, namespace: shop, uid: 4fa0be96-7142-4daf-9199-605c4d2e1f54 }
  spec: { type: ClusterIP, ports: [{ protocol: TCP, port: 80 }] }
- apiVersion: v1
  kind: Node
  metadata: { name: node-a }
  spec: { providerID: "hcloud://1001" }
  status: { addresses: [{ type: InternalIP, address: 10.0.1.11 }] }
- apiVersion: v1
  kind: Node
  metadata: { name: node-b, labels: { node.kubernetes.io/exclude-from-external-load-balancers: "true" } }
  spec: { providerID: "hcloud://1002" }
  status: { addresses: [{ type: InternalIP, address: 10.0.1.12 }] }
`

// TestFleetPlanBuiltinTemplateChange applies three Services' load
// balancers with the built-in hcloud set (through the stand-in), then
// plans the fleet with a candidate copy of that set whose health check
// changes for externalTrafficPolicy: Local only: exactly the two Local
// Services show a change, the exit code says so, and the live state is
// left as it was.
func TestFleetPlanBuiltinTemplateChange(t *testing.T) {
	env := standin.Setup(t, "hcloud")
	tofu := repo.Tofu(t)
	dir := t.TempDir()
	dump := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(dump, []byte(fleetDump), 0o644); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("cluster_name = \"prod\"\ntemplate_set = \"hcloud\"\nwork_dir = %q\nterraform {\n  binary = %q\n}\nload_balancer {\n  settings = { location = \"fsn1\" }\n}\n", filepath.Join(dir, "work"), tofu)
	baseCfg := filepath.Join(dir, "base.hcl")
	if err := os.WriteFile(baseCfg, []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}

	// The live load balancers, applied with the built-in set.
	cfg, err := config.Load(baseCfg)
	if err != nil {
		t.Fatal(err)
	}
	loader, err := templates.NewLoader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	svcs, nodes, err := manifest.ReadCluster(dump)
	if err != nil {
		t.Fatal(err)
	}
	targets := fleet.Targets(cfg, loader.Set(), svcs, nodes, nil)
	if len(targets) != 3 {
		t.Fatalf("targets = %v, want the 3 Services tfccm serves", targets)
	}
	for _, tg := range targets {
		if tg.Err != nil {
			t.Fatal(tg.Err)
		}
		ws := filepath.Join(dir, "live", tg.Spec.Name)
		if err := tg.Spec.WriteDir(ws); err != nil {
			t.Fatal(err)
		}
		env.Tofu(t, ws, "init", "-input=false")
		env.Tofu(t, ws, "apply", "-input=false", "-auto-approve")
	}
	states, _ := filepath.Glob(filepath.Join(dir, "work", "state", "*.tfstate"))
	if len(states) != 3 {
		t.Fatalf("live states = %v", states)
	}
	before := map[string]string{}
	for _, s := range states {
		b, _ := os.ReadFile(s)
		before[s] = string(b)
	}

	plan := func(cfgPath, format string) (int, string) {
		t.Helper()
		code, stdout, stderr := runCLI(t, "plan", "--config", cfgPath, "--objects", dump, "--cli-config", env.CLIConfig, "--format", format)
		if code == exitError || code == exitUsage {
			t.Fatalf("tfccm plan: exit %d\n%s\n%s", code, stdout, stderr)
		}
		return code, stdout
	}
	if code, out := plan(baseCfg, "text"); code != exitOK || !strings.Contains(out, "3 workspaces: 0 change") {
		t.Fatalf("the applied templates: exit %d, want 0 and no change:\n%s", code, out)
	}

	// The candidate: the built-in set with ETP Local Services (checked on
	// their healthCheckNodePort, not kube-proxy's 10256) checked every 5 s.
	override := filepath.Join(dir, "candidate")
	root, _ := repo.Root()
	if err := os.CopyFS(override, os.DirFS(filepath.Join(root, "templates", "hcloud"))); err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(override, "loadbalancer", "main.tf")
	src, _ := os.ReadFile(main)
	changed := strings.Replace(string(src), "interval = var.settings.health_check_interval",
		`interval = var.health_check.port != 10256 ? 5 : var.settings.health_check_interval`, 1)
	if changed == string(src) {
		t.Fatal("the hcloud template no longer has the line this test changes")
	}
	if err := os.WriteFile(main, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	candCfg := filepath.Join(dir, "candidate.hcl")
	if err := os.WriteFile(candCfg, []byte(base+fmt.Sprintf("override_dir = %q\n", override)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The same candidate under a policy: the shipped allowed-types rule
	// (passes) and a rule against health checks more often than every 10 s.
	allowed, err := os.ReadFile(filepath.Join(root, "examples", "policy", "allowed-resource-types.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	strict := filepath.Join(dir, "strict.hcl")
	if err := os.WriteFile(strict, []byte(base+fmt.Sprintf("override_dir = %q\n", override)+string(allowed)+`
policy "health-check-interval" {
  variable "fast" {
    expression = "plan.resource_changes.filter(rc, rc.type == 'hcloud_load_balancer_service' && rc.change.after != null && rc.change.after.health_check[0].interval < 10)"
  }
  validation {
    expression         = "variables.fast.size() == 0"
    message_expression = "variables.fast.map(rc, rc.address).join(', ') + ' checks more often than every 10 s'"
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := plan(candCfg, "json")
	if code != exitChanges {
		t.Fatalf("exit %d, want %d (changes):\n%s", code, exitChanges, out)
	}
	var rep fleet.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rep.Rows {
		got[r.Target] = fmt.Sprintf("+%d ~%d -%d %s", r.Add, r.Change, r.Destroy, r.Error)
	}
	want := map[string]string{"blog/db": "+0 ~1 -0 ", "shop/api": "+0 ~1 -0 ", "shop/web": "+0 ~0 -0 "}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
	_, md := plan(candCfg, "markdown")
	if !strings.Contains(md, "`shop/api`") || !strings.Contains(md, "`blog/db`") || strings.Contains(md, "shop/web") || !strings.Contains(md, "1 workspaces without changes") {
		t.Errorf("markdown:\n%s", md)
	}
	code, out = plan(strict, "json")
	if code != exitDenied {
		t.Fatalf("exit %d, want %d (denied):\n%s", code, exitDenied, out)
	}
	rep = fleet.Report{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rows {
		denied := len(r.Findings) == 1 && r.Findings[0].Rule == "health-check-interval" && r.Findings[0].Action == "deny" &&
			r.Findings[0].Message == `hcloud_load_balancer_service.port["80"] checks more often than every 10 s` ||
			r.Target == "blog/db" && len(r.Findings) == 1 && strings.Contains(r.Findings[0].Message, `port["5432"]`)
		if (r.Target != "shop/web") != denied {
			t.Errorf("%s: findings %+v", r.Target, r.Findings)
		}
	}
	for s, b := range before {
		if now, _ := os.ReadFile(s); string(now) != b {
			t.Errorf("tfccm plan changed the live state %s", s)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "work", "state", "*.lock.info")); len(left) > 0 {
		t.Errorf("locks left: %v", left)
	}
}

// TestFleetPlanLive reads the Services and Nodes through a kubeconfig
// (a real apiserver): the LoadBalancer Service and the routes are planned,
// the ClusterIP Service is not.
func TestFleetPlanLive(t *testing.T) {
	tofu := repo.Tofu(t)
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	for _, s := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 5432}}}},
	} {
		if _, err := client.CoreV1().Services("default").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24"}}}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, fmt.Sprintf("terraform {\n  binary = %q\n}\n", tofu))
	code, stdout, stderr := runCLI(t, "plan", "--config", cfg, "--kubeconfig", cluster.Kubeconfig(), "--format", "json")
	if code != exitOK && code != exitChanges {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var rep fleet.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, r := range rep.Rows {
		if r.Error != "" {
			t.Errorf("%s: %s", r.Target, r.Error)
		}
		targets = append(targets, r.Target)
	}
	if fmt.Sprint(targets) != "[default/web routes]" {
		t.Errorf("targets %v, want the LoadBalancer Service and the routes", targets)
	}

	// A tenant who may list the Services of their own namespace only: the
	// fleet plan reads every namespace's Services and the Nodes, so it is
	// refused by the apiserver, with the read it needed named, and plans
	// nothing (docs/security.md: tfccm plan is the admin's).
	t.Run("a tenant is refused", func(t *testing.T) {
		if _, err := client.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "tenant"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch"}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "tenant"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "tenant"},
			Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "tenant"}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		kc, err := cluster.UserKubeconfig("tenant", "127.0.0.1", "tenant")
		if err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCLI(t, "plan", "--config", cfg, "--kubeconfig", kc, "--format", "json")
		if code != exitError || stdout != "" {
			t.Fatalf("exit %d, stdout %q; want exit %d and no plan\n%s", code, stdout, exitError, stderr)
		}
		if !strings.Contains(stderr, "list Services") || !strings.Contains(stderr, "forbidden") {
			t.Errorf("stderr does not name the refused read:\n%s", stderr)
		}
	})
}
