package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestLoadBalancerWithTerraform runs the LoadBalancer path with HashiCorp
// Terraform as terraform.binary, as the README documents: the built-in
// local set plans and applies with it (no OpenTofu-only function), a node
// joining is followed, a value the template rejects is an Event that names
// Terraform and leaves the LB as it was, and deleting the Service leaves
// nothing in the cloud. It runs whenever a terraform binary is installed
// (TFCCM_TERRAFORM, else terraform on PATH); `make test-terraform` runs the
// whole local-cloud and e2e suites with it.
func TestLoadBalancerWithTerraform(t *testing.T) {
	tf := os.Getenv("TFCCM_TERRAFORM")
	if tf == "" {
		p, err := exec.LookPath("terraform")
		if err != nil {
			t.Skip("no terraform binary installed (set TFCCM_TERRAFORM)")
		}
		tf = p
	}
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	dir := t.TempDir()
	cfg, workDir := writeCloudConfig(t, dir, harness.Block("load_balancer", cloud.LBSettings()))
	// writeCloudConfig names the pinned OpenTofu; this test's CCM runs Terraform.
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	withTF := strings.Replace(string(b), fmt.Sprintf("binary = %q", repo.Tofu(t)), fmt.Sprintf("binary = %q", tf), 1)
	if withTF == string(b) {
		t.Fatalf("cloud config names no OpenTofu binary to replace:\n%s", b)
	}
	writeFile(t, dir, "cloud.hcl", withTF)

	serveNodes(t, cloud, 30080)
	createNode(t, client, cloud, "node-a")
	startCCM(t, cluster, cfg, "--concurrent-service-syncs=2")

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vip := waitVIP(t, client, "web")
	backendsAre(t, vip, 80, "node-a")
	lbDir := lbWorkspaceDir(t, workDir)
	if lock, err := os.ReadFile(filepath.Join(lbDir, ".terraform.lock.hcl")); err != nil || !strings.Contains(string(lock), "registry.terraform.io/tfccm/lbhost") {
		t.Errorf("the workspace was not initialized by Terraform (lock file: %q, %v)", lock, err)
	}

	createNode(t, client, cloud, "node-b")
	backendsAre(t, vip, 80, "node-a", "node-b")

	settledTree(t, lbDir)
	before := lbContent(t, cloud)
	updateService(t, client, func(s *corev1.Service) { s.Spec.LoadBalancerIP = "192.0.2.77" })
	eventually(t, 2*time.Minute, "an invalid-input Event naming Terraform's diagnostic", func(ctx context.Context) error {
		ev := harness.Events(ctx, client, "default", "web")
		if !strings.Contains(ev, "TerraformInvalidInput") || !strings.Contains(ev, "192.0.2.77") {
			return fmt.Errorf("events: %s", ev)
		}
		return nil
	})
	backendsAre(t, vip, 80, "node-a", "node-b")
	if after := lbContent(t, cloud); after != before {
		t.Errorf("a rejected input changed the cloud:\n%s\nwas:\n%s", after, before)
	}

	if err := client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServiceDeleted(t, client, "web", 2*time.Minute)
	if left := cloud.LBObjects(); len(left) > 0 {
		t.Errorf("left in the cloud after the Service was deleted: %v", left)
	}
}

// lbContent is every load balancer object of the cloud with its content.
func lbContent(t *testing.T, cloud *localcloud.Cloud) string {
	t.Helper()
	var b strings.Builder
	for _, o := range cloud.LBObjects() {
		c, err := os.ReadFile(filepath.Join(cloud.StateDir, o))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "== %s\n%s", o, c)
	}
	return b.String()
}
