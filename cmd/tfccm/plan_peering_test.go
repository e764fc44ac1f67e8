package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/fleet"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/workspace"
)

// peeringOverride is a template override with a BGP peering module and
// a bgp variant that need nothing but tofu: one terraform_data per peer,
// one per Service. What the modules hold is not what this test is about;
// the controller's catalog, state backend and destroy are.
var peeringOverride = map[string]string{
	"bgp/main.tf": `variable "cluster_name" {
  type = string
}
variable "settings" {
  type = any
}
resource "terraform_data" "peer" {
  for_each = { for p in var.settings.bgp.peers : p.name => p.address }
  input    = each.value
}
`,
	"loadbalancer.bgp/main.tf": `variable "load_balancer_name" {
  type = string
}
variable "settings" {
  type = any
}
resource "terraform_data" "announce" {
  input = var.load_balancer_name
}
output "ingress" {
  value = [{ ip = "10.252.0.9", hostname = null, ip_mode = "VIP" }]
}
`,
}

// TestFleetPlanPeeringDestroy: before anything is applied the catalog
// holds no peering and there is no row. A BGP peering applied by the workspace
// engine as the controller applies it (state and catalog in the cluster,
// the kubernetes backend); a candidate config without bgp makes `tfccm
// plan` show the peering's destroy (-2, its two peers) read from the
// catalog, judged by the gate as a destroy of kind bgp; with a Service of
// the bgp variant in the cluster the row says the peering is kept and
// counts no destroy; a catalog that cannot be read is the row's error,
// the backend's token not in it; and no plan wrote to the state backend.
func TestFleetPlanPeeringDestroy(t *testing.T) {
	tofu := repo.Tofu(t)
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	dir := t.TempDir()
	override := filepath.Join(dir, "templates")
	for name, src := range peeringOverride {
		p := filepath.Join(override, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, backend, settings, extra string) string {
		t.Helper()
		src := fmt.Sprintf(`cluster_name = "prod"
work_dir     = %q
override_dir = %q
terraform {
  binary = %q
}
%s
load_balancer {
  settings = { %s }
}
%s`, filepath.Join(dir, "work-"+name), override, tofu, backend, settings, extra)
		p := filepath.Join(dir, name+".hcl")
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	backend := fmt.Sprintf("backend \"kubernetes\" {\n  config_path = %q\n  namespace   = \"default\"\n}", cluster.Kubeconfig())
	bgp := `bgp = { asn = 64512, peers = [{ name = "tor-a", address = "10.0.0.1" }, { name = "tor-b", address = "10.0.0.2" }] }`
	applied := write("applied", backend, bgp, "")
	candidate := write("candidate", backend, "", "")

	// Nothing applied yet: the catalog holds no peering, so there is no
	// row. Reading the catalog wrote no entry and no peering state: only
	// the catalog's own empty default state, which tofu init creates in
	// the kubernetes backend (as the controller's first use of the
	// catalog does).
	t.Run("nothing applied: no row", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "plan", "--config", candidate, "--kubeconfig", cluster.Kubeconfig(), "--format", "json")
		var rep fleet.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != exitOK || len(rep.Rows) != 0 {
			t.Errorf("exit %d, report %+v (%v); want exit 0 and no row\n%s", code, rep, err, stderr)
		}
		for name := range stateSecrets(t, client) {
			if name != "tfstate-default-tfccm-catalog" {
				t.Errorf("reading the catalog wrote %s", name)
			}
		}
	})

	applyPeering(t, applied)
	stateBefore := stateVersions(t, client)

	plan := func(cfg string) (int, fleet.Row, string) {
		t.Helper()
		code, stdout, stderr := runCLI(t, "plan", "--config", cfg, "--kubeconfig", cluster.Kubeconfig(), "--format", "json")
		var rep fleet.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("exit %d, no report: %v\n%s\n%s", code, err, stdout, stderr)
		}
		for _, r := range rep.Rows {
			if r.Target == templates.PeeringWorkspaceName {
				return code, r, stdout
			}
		}
		t.Fatalf("exit %d, no %s row:\n%s\n%s", code, templates.PeeringWorkspaceName, stdout, stderr)
		return 0, fleet.Row{}, ""
	}

	t.Run("applied settings: no change", func(t *testing.T) {
		code, r, out := plan(applied)
		if code != exitOK || r.Retired || r.Changes() || r.Error != "" {
			t.Errorf("exit %d, row %+v; want exit 0 and the peering unchanged:\n%s", code, r, out)
		}
	})
	t.Run("bgp removed, no Service of the bgp variant: destroyed", func(t *testing.T) {
		code, r, out := plan(candidate)
		if code != exitChanges || !r.Retired || r.Kept || r.Destroy != 2 || r.Add+r.Change != 0 || r.Error != "" || r.Module != templates.PeeringDir {
			t.Fatalf("exit %d, row %+v; want exit %d and the peering's destroy -2:\n%s", code, r, exitChanges, out)
		}
		if !strings.HasPrefix(r.Note, "destroyed:") {
			t.Errorf("note %q, want it to say the controller destroys it", r.Note)
		}
	})
	t.Run("bgp removed, the destroy denied by a policy on kind bgp", func(t *testing.T) {
		strict := write("strict", backend, "", `policy "keep-bgp" {
  action = "deny"
  validation {
    expression = "!(workspace.kind == 'bgp' && workspace.destroy)"
    message    = "the BGP peering is destroyed in a change window only"
  }
}
`)
		code, r, out := plan(strict)
		if code != exitDenied || !r.Denied() || r.Destroy != 2 {
			t.Errorf("exit %d, row %+v; want exit %d and keep-bgp denying the destroy:\n%s", code, r, exitDenied, out)
		}
	})
	t.Run("bgp removed, a Service of the bgp variant left: kept", func(t *testing.T) {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{"tfccm.io/template": "bgp"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080}}}}
		if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}) }()
		_, r, out := plan(candidate)
		if !r.Retired || !r.Kept || r.Destroy != 0 || r.Later != 2 || r.Changes() || r.Error != "" {
			t.Fatalf("row %+v; want the peering kept, no destroy now, -2 later:\n%s", r, out)
		}
		if !strings.Contains(r.Note, "kept: 1 Service(s) of the bgp variant") || !strings.Contains(r.Note, "default/web") {
			t.Errorf("note %q, want it to say it is kept for default/web", r.Note)
		}
	})
	t.Run("catalog unreadable: the row's error, no secret", func(t *testing.T) {
		const token = "tfccm-test-token-9f8e7d"
		bad := filepath.Join(dir, "unreachable.kubeconfig")
		if err := os.WriteFile(bad, []byte(`apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://127.0.0.1:1" } }]
users: [{ name: u, user: {} }]
contexts: [{ name: c, context: { cluster: c, user: u } }]
current-context: c
`), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := write("unreachable", fmt.Sprintf("backend \"kubernetes\" {\n  config_path = %q\n  namespace   = \"default\"\n  token       = %q\n}", bad, token), "", "")
		code, r, out := plan(cfg)
		if code != exitError || !strings.Contains(r.Error, "state backend's catalog") || !strings.Contains(r.Error, "kubernetes backend") {
			t.Errorf("exit %d, row error %q; want exit %d and the catalog's backend named", code, r.Error, exitError)
		}
		if strings.Contains(out, token) {
			t.Errorf("the report quotes the backend's token:\n%s", out)
		}
	})
	// The peering's state and the catalog are as the engine left them.
	after := stateVersions(t, client)
	for name, v := range stateBefore {
		if after[name] != v {
			t.Errorf("tfccm plan wrote %s: resource version %q, before %q", name, after[name], v)
		}
	}
}

// applyPeering applies the peering of cfgPath with the workspace engine
// as the controller does (the catalog in the state backend) and waits
// until the catalog holds it.
func applyPeering(t *testing.T, cfgPath string) {
	t.Helper()
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	loader, err := templates.NewLoader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	spec, ok, err := loader.Set().RenderPeering(cfg)
	if err != nil || !ok {
		t.Fatalf("render the peering: %v (ok %v)", err, ok)
	}
	opts := workspace.OptionsFor(cfg)
	if opts.Catalog, err = templates.Catalog(cfg); err != nil || opts.Catalog == nil {
		t.Fatalf("catalog: %v", err)
	}
	e, err := workspace.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer func() {
		cancel()
		<-e.Done()
	}()
	e.Start(ctx)
	if _, err := e.Apply(*spec); err != nil {
		t.Fatal(err)
	}
	if st, err := e.Wait(ctx, spec.Name, spec.Hash); err != nil || st.Phase != workspace.PhaseApplied {
		t.Fatalf("apply the peering: %+v, %v", st, err)
	}
	for {
		names, err := e.Catalogued(ctx)
		if err == nil && slices.Contains(names, templates.PeeringWorkspaceName) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the catalog does not hold the peering: %v, %v", names, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stateVersions are the state backend's Secrets (states and catalog
// entries) by name, with their resource versions.
func stateVersions(t *testing.T, client kubernetes.Interface) map[string]string {
	t.Helper()
	out := stateSecrets(t, client)
	if len(out) < 2 {
		t.Fatalf("state Secrets %v: want the peering's state and its catalog entry", out)
	}
	return out
}

// stateSecrets are the state backend's Secrets by name, with their
// resource versions.
func stateSecrets(t *testing.T, client kubernetes.Interface) map[string]string {
	t.Helper()
	list, err := client.CoreV1().Secrets("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range list.Items {
		if strings.HasPrefix(s.Name, "tfstate-") {
			out[s.Name] = s.ResourceVersion
		}
	}
	return out
}
