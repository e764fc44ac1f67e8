package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

// TestOrphanFromStateBackend: a load balancer leaked while no CCM ran (the
// CCM stopped, its Service deleted and the finalizer stripped by hand) is
// found by a new CCM with an empty work dir in the kubernetes state
// backend's catalog and destroyed with the configuration stored there: a
// log line names the Service, the metric counts it, and its state Secret
// and catalog entry are gone.
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
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "leaky", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, NodePort: 30081, Protocol: corev1.ProtocolTCP}}}}
	created, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ip := waitVIP(t, client, "leaky"); ip != "192.0.2.20" {
		t.Fatalf("ingress %s", ip)
	}
	// The kubernetes backend keeps a Terraform workspace's state in Secret
	// tfstate-<workspace>-<secret_suffix>: the catalog's entries are
	// tfstate-<load balancer workspace>-tfccm-catalog.
	catalogEntry := "tfstate-lb-e2e-"
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
	eventually(t, time.Minute, "the catalog holds the load balancer", func(ctx context.Context) error {
		names, err := secretsWith(ctx, "-tfccm-catalog")
		if err != nil || !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, catalogEntry) }) {
			return fmt.Errorf("catalog Secrets %v, %v", names, err)
		}
		return nil
	})

	// The CCM stops; the Service is deleted and its finalizer stripped by
	// hand, as an uninstall gone wrong leaves it.
	a.Stop()
	if err := client.CoreV1().Services("default").Delete(ctx, "leaky", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := client.CoreV1().Services("default").Patch(ctx, "leaky", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitServiceDeleted(t, client, "leaky", 30*time.Second)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the load balancer was destroyed before the new CCM ran; the test proves nothing")
	}

	// A new CCM with an empty work dir destroys it.
	cfgB, _ := writeCloudConfig(t, t.TempDir(), blocks)
	b := startCCM(t, cluster, cfgB)
	eventually(t, 2*time.Minute, "the orphaned load balancer is destroyed", func(ctx context.Context) error {
		got, err := os.ReadFile(marker)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(string(got), "e2e-") {
			return fmt.Errorf("destroyed %q, want the load balancer's name", got)
		}
		// The load balancer's state (tfstate-default-lb-e2e-...) and its
		// catalog entry are gone; the catalog's own default workspace
		// (tfstate-default-tfccm-catalog, empty) stays.
		names, err := secretsWith(ctx, "lb-e2e-")
		if err != nil || len(names) != 0 {
			return fmt.Errorf("state and catalog Secrets left: %v, %v", names, err)
		}
		return nil
	})
	if log := b.Log(); !strings.Contains(log, "Destroying orphaned load balancer found in the state backend") ||
		!strings.Contains(log, `service="default/leaky"`) || !strings.Contains(log, string(created.UID)) {
		t.Errorf("no log line naming the orphan's Service and UID:\n%s", b.LogTail(40))
	}
	if m := ccmMetrics(t, cluster, b); !strings.Contains(m, `tfccm_load_balancer_orphans_destroyed_total{source="state_backend"} 1`) {
		t.Errorf("metric: %s", grepLines(m, "orphans_destroyed"))
	}
}
