package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
)

// markerModule is a load balancer template whose destroy writes a file
// (%s: its path), so the test sees that the load balancer was destroyed.
const markerModule = `variable "load_balancer_name" {
  type = string
}

resource "terraform_data" "lb" {
  input = var.load_balancer_name
  provisioner "local-exec" {
    when    = destroy
    command = "echo \"${self.input}\" >> '%s'"
  }
}

output "ingress" {
  value = [{ ip = "192.0.2.20", hostname = null, ip_mode = "VIP" }]
}
`

// TestOrphanFromStateBackend: load balancers leaked while no CCM ran (the
// CCM stopped, their Services deleted and the finalizers stripped by hand)
// are found by a new CCM with an empty work dir in the kubernetes state
// backend's catalog and destroyed with the configuration stored there: a
// log line names each Service, the metric counts them, and their state
// Secrets and catalog entries are gone. In review mode the destroy waits
// for its published plan's approval on the plan's ConfigMap.
func TestOrphanFromStateBackend(t *testing.T) {
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "destroyed")
	override := t.TempDir()
	if err := os.MkdirAll(filepath.Join(override, "loadbalancer"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(override, "loadbalancer", "main.tf"), []byte(fmt.Sprintf(markerModule, marker)), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks := fmt.Sprintf("override_dir = %q\n", override) +
		fmt.Sprintf("backend \"kubernetes\" {\n  config_path = %q\n  namespace   = \"default\"\n}\n", cluster.Kubeconfig())
	cfgA, _ := writeCloudConfig(t, t.TempDir(), blocks)
	a := startCCM(t, cluster, cfgA)
	registerNode(t, client, harness.Node{Name: "node-a", InternalIPs: []string{"10.250.0.2"}})
	uids := map[string]types.UID{}
	for i, name := range []string{"leaky", "reviewed"} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, NodePort: int32(30081 + i), Protocol: corev1.ProtocolTCP}}}}
		created, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[name] = created.UID
	}
	for name := range uids {
		if ip := waitVIP(t, client, name); ip != "192.0.2.20" {
			t.Fatalf("%s: ingress %s", name, ip)
		}
	}
	// The kubernetes backend keeps a Terraform workspace's state in Secret
	// tfstate-<workspace>-<secret_suffix>: the load balancers' states are
	// tfstate-default-lb-e2e-*, the catalog's entries
	// tfstate-lb-e2e-*-tfccm-catalog.
	secretsWith := func(ctx context.Context, sub string) ([]string, error) {
		list, err := client.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var names []string
		for _, s := range list.Items {
			if strings.Contains(s.Name, sub) {
				names = append(names, s.Name)
			}
		}
		return names, nil
	}
	eventually(t, time.Minute, "the catalog holds both load balancers", func(ctx context.Context) error {
		names, err := secretsWith(ctx, "-tfccm-catalog")
		n := 0
		for _, s := range names {
			if strings.HasPrefix(s, "tfstate-lb-e2e-") {
				n++
			}
		}
		if err != nil || n != 2 {
			return fmt.Errorf("catalog Secrets %v, %v", names, err)
		}
		return nil
	})

	// The CCM stops; the Services are deleted and their finalizers
	// stripped by hand, as an uninstall gone wrong leaves them.
	a.Stop()
	for name := range uids {
		if err := client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := client.CoreV1().Services("default").Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		waitServiceDeleted(t, client, name, 30*time.Second)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a load balancer was destroyed before the new CCM ran; the test proves nothing")
	}
	destroyed := func() int {
		b, _ := os.ReadFile(marker)
		return strings.Count(string(b), "e2e-")
	}
	logged := func(log, name string) bool {
		return strings.Contains(log, "Destroying orphaned load balancer found in the state backend") &&
			strings.Contains(log, fmt.Sprintf(`service="default/%s" serviceUID=%q`, name, uids[name]))
	}

	// A new CCM in review mode with an empty work dir: each destroy is a
	// published plan; the one approved on its ConfigMap is destroyed.
	cfgB, _ := writeCloudConfig(t, t.TempDir(), blocks, "review = true")
	b := startCCM(t, cluster, cfgB)
	var plan *corev1.ConfigMap
	eventually(t, 2*time.Minute, "the orphans' destroy plans are published", func(ctx context.Context) error {
		cms, err := client.CoreV1().ConfigMaps(tfccmNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var plans []corev1.ConfigMap
		for _, cm := range cms.Items {
			if cm.Annotations[annotations.PlanHash] != "" {
				plans = append(plans, cm)
			}
		}
		if len(plans) != 2 {
			return fmt.Errorf("%d plan ConfigMaps", len(plans))
		}
		for i := range plans {
			if plans[i].Labels[annotations.PlanServiceUID] == string(uids["reviewed"]) {
				plan = &plans[i]
			}
		}
		if plan == nil || !strings.Contains(plan.Data["plan.txt"], "destroy") {
			return fmt.Errorf("no destroy plan for Service reviewed")
		}
		return nil
	})
	if n := destroyed(); n != 0 {
		t.Fatalf("%d load balancers destroyed before any approval", n)
	}
	plan.Annotations[annotations.ApprovedPlan.Name] = plan.Annotations[annotations.PlanHash]
	if _, err := client.CoreV1().ConfigMaps(tfccmNamespace).Update(ctx, plan, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ws := strings.TrimPrefix(plan.Name, annotations.PlanConfigMapPrefix)
	eventually(t, 2*time.Minute, "the approved orphan is destroyed, its state and catalog entry gone", func(ctx context.Context) error {
		if n := destroyed(); n != 1 {
			return fmt.Errorf("%d destroyed", n)
		}
		if names, err := secretsWith(ctx, ws); err != nil || len(names) != 0 {
			return fmt.Errorf("Secrets of %s left: %v, %v", ws, names, err)
		}
		return nil
	})
	if log := b.Log(); !logged(log, "leaky") || !logged(log, "reviewed") {
		t.Errorf("no log lines naming the orphans' Services and UIDs:\n%s", b.LogTail(40))
	}
	b.Stop()

	// Another new CCM, not in review mode: the orphan left destroys at once.
	cfgC, _ := writeCloudConfig(t, t.TempDir(), blocks)
	c := startCCM(t, cluster, cfgC)
	eventually(t, 2*time.Minute, "the other orphan is destroyed, its state and catalog entry gone", func(ctx context.Context) error {
		if n := destroyed(); n != 2 {
			return fmt.Errorf("%d destroyed", n)
		}
		// The catalog's own default workspace (tfstate-default-tfccm-catalog,
		// empty) stays. The plan Secret in which the review-mode CCM kept
		// the orphan's destroy plan goes too: it is not owned by the gone
		// Service (the garbage collector would have removed it at once),
		// and this CCM, outside review mode, deletes it with the orphan.
		names, err := secretsWith(ctx, "lb-e2e-")
		if err != nil || len(names) != 0 {
			return fmt.Errorf("state, catalog and plan Secrets left: %v, %v", names, err)
		}
		return nil
	})
	if log := c.Log(); !logged(log, "leaky") {
		t.Errorf("no log line naming the orphan's Service and UID:\n%s", c.LogTail(40))
	}
	if m := ccmMetrics(t, cluster, c); !strings.Contains(m, `tfccm_load_balancer_orphans_destroyed_total{source="state_backend"} 1`) {
		t.Errorf("metric: %s", grepLines(m, "orphans_destroyed"))
	}
}
