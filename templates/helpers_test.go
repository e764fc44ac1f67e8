package templates

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/workspace"
)

// testConfig parses a cloud config from HCL source, the way the controller does.
func testConfig(t testing.TB, src string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(src), "cloud.hcl")
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// clusterModule copies a cluster-wide module of the repository's
// templates (module: "nodes/bgp", "baremetal/bgp"; applied once per
// cluster, not one of a set's per-Service modules) into a new directory
// with tfvars as test.auto.tfvars, runs tofu init there (with tfccm's
// lbhost provider) and returns tofu in it.
func clusterModule(t *testing.T, module, tfvars string) testkit.Tofu {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "templates", module, "*.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("templates/%s: %v", module, err)
	}
	dir := t.TempDir()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "test.auto.tfvars"), []byte(tfvars), 0o644); err != nil {
		t.Fatal(err)
	}
	tf := testkit.Tofu{Binary: repo.Tofu(t), Dir: dir, CLIConfig: repo.LBHost(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := tf.Run(ctx, "init", "-input=false"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	return tf
}

const baseConfig = `
cluster_name = "prod-eu"
work_dir     = "/var/lib/tfccm"
load_balancer {
  settings     = { vip_pool = "10.252.0.0/24", unused_by_variants = "x" }
  service_vars = ["size", "replicas", "subnet"]
}
routes {
  settings = { cloud_netns = "tfccm-cloud" }
}
`

func fullSet(t testing.TB) *Set {
	t.Helper()
	s, diags := LoadSet(os.DirFS("testdata/sets"), "full", "testdata/sets/full")
	if diags.HasErrors() {
		t.Fatalf("load: %s", FormatDiagnostics(diags))
	}
	return s
}

func svc(mut func(*corev1.Service)) *corev1.Service {
	app := "kubernetes.io/h2c"
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: "web", UID: types.UID("7d3e2a8c-1b1f-4a57-9a53-0f6d3c2b9e11"),
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"example.com/owner": "team ${var.x} %{ if true }", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
		},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
				{Name: "grpc", Protocol: corev1.ProtocolTCP, Port: 9090, NodePort: 30090, AppProtocol: &app},
			},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			IPFamilies:            []corev1.IPFamily{corev1.IPv4Protocol},
			SessionAffinity:       corev1.ServiceAffinityNone,
		},
	}
	if mut != nil {
		mut(s)
	}
	return s
}

func node(name, ip, zone string, podCIDRs ...string) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, labelZone: zone, labelRegion: "eu", labelInstanceType: "small",
		}},
		Spec: corev1.NodeSpec{ProviderID: "terraform://local/" + name, PodCIDRs: podCIDRs},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name},
		}},
	}
	if len(podCIDRs) > 0 {
		n.Spec.PodCIDR = podCIDRs[0]
	}
	return n
}

func testNodes() []*corev1.Node {
	return []*corev1.Node{
		node("node-b", "10.250.0.3", "zone-b", "10.244.2.0/24", "fd00:10:244:2::/64"),
		node("node-a", "10.250.0.2", "zone-a", "10.244.1.0/24", "fd00:10:244:1::/64"),
		{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}}, // bare: nulls and empty collections
	}
}

// summary is the golden form of a workspace: metadata, file list with modes,
// and the full text of the generated files.
func summary(ws *workspace.Spec) []byte { return summarize(ws, true) }

// summarize with full=false leaves out the hash and module file sizes: for
// the built-in set, whose module files other people edit.
func summarize(ws *workspace.Spec, full bool) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "workspace: %s\nmodule: %s\nstate_workspace: %s\n", ws.Name, ws.Module, ws.StateWorkspace)
	if full {
		fmt.Fprintf(&b, "hash: %s\n", ws.Hash)
	}
	for _, k := range sortedKeys(ws.BackendConfig) {
		fmt.Fprintf(&b, "backend_config: %s=<redacted, %d bytes>\n", k, len(ws.BackendConfig[k]))
	}
	b.WriteString("files:\n")
	for _, p := range ws.Paths() {
		if full {
			fmt.Fprintf(&b, "  %04o %s (%d bytes)\n", ws.Modes[p], p, len(ws.Files[p]))
		} else {
			fmt.Fprintf(&b, "  %04o %s\n", ws.Modes[p], p)
		}
	}
	for _, p := range []string{TfvarsFile, BackendFile} {
		fmt.Fprintf(&b, "--- %s\n%s", p, ws.Files[p])
	}
	return b.Bytes()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testkit.Golden(t, filepath.Join("testdata", "golden", name), got)
}
