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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
)

// slowModule is a load balancer template whose apply takes a few seconds,
// so that the leader can be killed while tofu applies it.
const slowModule = `variable "load_balancer_name" {
  type = string
}

resource "terraform_data" "lb" {
  input = var.load_balancer_name
  provisioner "local-exec" {
    command = "sleep 6"
  }
}

output "ingress" {
  value = [{ ip = "192.0.2.10", hostname = null, ip_mode = "VIP" }]
}
`

// TestHALeaderKilledMidApply: two replicas with leader election and the
// kubernetes state backend, each with its own (emptyDir-like) work dir.
// The leader is killed -9 (its whole process group, as a pod dies) while
// tofu applies; the other takes the leader Lease within the lease
// duration, releases the dead leader's state lock with no manual step and
// finishes the work; no workspace is applied by both.
func TestHALeaderKilledMidApply(t *testing.T) {
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	blocks := slowReplicaBlocks(t, cluster)
	cfgA, workA := writeCloudConfig(t, t.TempDir(), blocks)
	cfgB, _ := writeCloudConfig(t, t.TempDir(), blocks)
	const lease, renew, retry = 6 * time.Second, 4 * time.Second, time.Second
	leFlags := []string{"--leader-elect-lease-duration=" + lease.String(), "--leader-elect-renew-deadline=" + renew.String(), "--leader-elect-retry-period=" + retry.String()}
	start := func(cfg, host string) *harness.CCM {
		c, err := harness.StartCCM(harness.CCMOptions{Binary: ccmBinary(t), Kubeconfig: cluster.Kubeconfig(), CloudConfig: cfg,
			Dir: t.TempDir(), Flags: leFlags, Hostname: host})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Kill() })
		return c
	}
	leader := func(ctx context.Context) string { return leaseHolder(ctx, client) }
	a := start(cfgA, "tfccm-a")
	eventually(t, time.Minute, "replica a leads", func(ctx context.Context) error {
		if !strings.HasPrefix(leader(ctx), "tfccm-a_") {
			return fmt.Errorf("leader %q", leader(ctx))
		}
		return nil
	})
	b := start(cfgB, "tfccm-b")
	serveWebUntilApplyOfA(t, client)
	killed := time.Now()
	a.Kill()
	// Its tofu dies with it, and so do the providers tofu started (the
	// provisioner's `sleep` may finish on its own).
	eventually(t, 3*time.Second, "no tofu or provider of the killed leader left", func(context.Context) error {
		if left := tofuOrProviders(workA); len(left) > 0 {
			return fmt.Errorf("still running: %v", left)
		}
		return nil
	})
	eventually(t, time.Minute, "replica b takes the leader Lease", func(ctx context.Context) error {
		if !strings.HasPrefix(leader(ctx), "tfccm-b_") {
			return fmt.Errorf("leader %q", leader(ctx))
		}
		return nil
	})
	takeover := time.Since(killed)
	// The dead leader's state lock never expires: b can only apply once
	// it has recognised and released it.
	ip := waitVIP(t, client, "web")
	finished := time.Since(killed)
	t.Logf("takeover %s after the kill (lease %s); load balancer served %s after the kill", takeover.Round(100*time.Millisecond), lease, finished.Round(100*time.Millisecond))
	if ip != "192.0.2.10" {
		t.Errorf("ingress %s", ip)
	}
	if takeover > lease+2*retry+3*time.Second {
		t.Errorf("takeover took %s, more than the lease duration %s", takeover, lease)
	}
	if strings.Contains(a.Log(), "TerraformApplied") {
		t.Errorf("the killed leader finished an apply it should not have")
	}
	// The Service's status can be written before the apply's Event is
	// logged: wait for the Event, then check there is only one.
	eventually(t, 30*time.Second, "replica b records its apply", func(context.Context) error {
		if !strings.Contains(b.Log(), `reason="TerraformApplied"`) {
			return fmt.Errorf("no TerraformApplied in replica b's log")
		}
		return nil
	})
	if n := strings.Count(b.Log(), `reason="TerraformApplied"`); n != 1 {
		t.Errorf("replica b applied %d times, want 1", n)
	}
	if !strings.Contains(b.Log(), "Recorded this incarnation") {
		t.Errorf("replica b did not record itself")
	}
}

// tofuOrProviders lists the tofu and provider processes under workDir.
func tofuOrProviders(workDir string) []harness.Process {
	var out []harness.Process
	for _, p := range harness.ProcessesUnder(workDir) {
		if b := filepath.Base(p.Args[0]); b == "tofu" || strings.HasPrefix(b, "terraform-provider-") {
			out = append(out, p)
		}
	}
	return out
}

// slowReplicaBlocks are the cloud config blocks of the replicas of the HA
// tests: the slow load balancer module as an override, state in the
// kubernetes backend (shared by the replicas).
func slowReplicaBlocks(t *testing.T, cluster *devcluster.Cluster) string {
	t.Helper()
	override := t.TempDir()
	if err := os.MkdirAll(filepath.Join(override, "loadbalancer"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(override, "loadbalancer", "main.tf"), []byte(slowModule), 0o644); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("override_dir = %q\n", override) +
		fmt.Sprintf("backend \"kubernetes\" {\n  config_path = %q\n  namespace   = \"default\"\n}\n", cluster.Kubeconfig())
}

// leaseHolder is the holder of the CCM's leader Lease, "" if none.
func leaseHolder(ctx context.Context, client kubernetes.Interface) string {
	l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, annotations.LeaderLease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// serveWebUntilApplyOfA creates Service default/web over node-a and waits
// until replica a's apply of it holds the state lock.
func serveWebUntilApplyOfA(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	registerNode(t, client, harness.Node{Name: "node-a", InternalIPs: []string{"10.250.0.2"}})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}}}}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "replica a's apply holds the state lock", func(ctx context.Context) error {
		leases, err := client.CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, l := range leases.Items {
			if info := l.Annotations["app.terraform.io/lock-info"]; strings.Contains(info, "tfccm-a") && strings.Contains(info, "OperationTypeApply") && l.Spec.HolderIdentity != nil {
				return nil
			}
		}
		return fmt.Errorf("no apply lock held by replica a yet")
	})
}
