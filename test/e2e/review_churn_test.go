package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestReviewChurnBench (make bench; TFCCM_BENCH_REVIEW_CHURN=N load
// balancers, 1,000 there) measures review mode under node churn on the
// local set: N Services in review mode (their creates approved), then one
// node joins without the rule backends-only-without-review
// (examples/policy) — every load balancer's plan waits for an approval —
// and another joins with it, after a restart of the CCM with the rule:
// none waits. It reports the approvals needed and the time to converge
// (every HAProxy frontend forwarding to the new node) each way, and fails
// when a plan waits with the rule or one does not without it.
func TestReviewChurnBench(t *testing.T) {
	n := harness.BenchCount(t, "TFCCM_BENCH_REVIEW_CHURN", "TFCCM_BENCH_REVIEW_CHURN=N runs the review-mode churn benchmark (make bench)")
	// A VIP pool and a service range that hold N (1,000: a /22 VIP pool).
	cloud := localcloud.ForTest(t, localcloud.Options{VIPs: n})
	cluster := devcluster.ForTestWith(t, devcluster.Options{ServiceCIDRs: "10.0.0.0/16"})
	client := cluster.Client()
	serveNodes(t, cloud, 30080)
	createNode(t, client, cloud, "node-a")
	rule, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "policy", "backends-only-without-review.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lb := harness.Block("load_balancer", cloud.LBSettings())
	cfg, _ := writeCloudConfig(t, dir, lb, "review = true", fmt.Sprintf("parallelism = %d", burstParallelism))
	ccm := startCCM(t, cluster, cfg)

	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("churn-%04d", i)
	}
	forEach(t, names, 20, func(ctx context.Context, name string) error {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
		_, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
		return err
	})
	start := time.Now()
	approveUntil(t, client, n, 30*time.Minute)
	waitAllIngress(t, client, names, 30*time.Minute)
	t.Logf("REVIEW_CHURN: %d load balancers created in review mode (creates approved) in %s", n, time.Since(start).Round(time.Second))

	// Without the rule: node-b joins; every plan waits for a person.
	start = time.Now()
	createNode(t, client, cloud, "node-b")
	seen := map[string]bool{}
	eventually(t, 30*time.Minute, fmt.Sprintf("%d plans published", n), func(ctx context.Context) error {
		for h := range pendingPlans(ctx, t, client) {
			seen[h] = true
		}
		if len(seen) < n {
			return fmt.Errorf("%d of %d plans published", len(seen), n)
		}
		return nil
	})
	published := time.Since(start)
	approveStart := time.Now()
	approveUntil(t, client, n, 30*time.Minute)
	waitFrontendsServe(t, cloud, "node-b", n, 30*time.Minute)
	t.Logf("REVIEW_CHURN: without the rule, one node joining: %d approvals needed; %d plans published in %s; approved and converged %s later (%s in all)",
		len(seen), n, published.Round(time.Second), time.Since(approveStart).Round(time.Second), time.Since(start).Round(time.Second))
	ccm.Stop()

	// With the rule: node-c joins; no plan waits.
	cfg, _ = writeCloudConfig(t, dir, lb+"\n"+string(rule), "review = true", fmt.Sprintf("parallelism = %d", burstParallelism))
	startCCM(t, cluster, cfg)
	start = time.Now()
	createNode(t, client, cloud, "node-c")
	waiting := map[string]bool{}
	eventually(t, 30*time.Minute, "every frontend serving node-c", func(ctx context.Context) error {
		for h := range pendingPlans(ctx, t, client) {
			waiting[h] = true
		}
		return frontendsServe(cloud, "node-c", n)
	})
	t.Logf("REVIEW_CHURN: with backends-only-without-review, one node joining: %d approvals needed; converged in %s", len(waiting), time.Since(start).Round(time.Second))
	if len(waiting) > 0 {
		t.Errorf("%d plans waited for approval with the rule", len(waiting))
	}
}

// pendingPlans returns the plan hashes published in tfccm's namespace and
// not approved yet.
func pendingPlans(ctx context.Context, t *testing.T, client kubernetes.Interface) map[string]bool {
	t.Helper()
	list, err := client.CoreV1().ConfigMaps(tfccmNamespace).List(ctx, metav1.ListOptions{LabelSelector: annotations.PlanKind + "=" + annotations.PlanOfLoadBalancer})
	if err != nil {
		t.Logf("list plan ConfigMaps: %v", err)
		return nil
	}
	out := map[string]bool{}
	for _, cm := range list.Items {
		if h := cm.Annotations[annotations.PlanHash]; h != "" && cm.Annotations[annotations.ApprovedPlan.Name] != h {
			out[h] = true
		}
	}
	return out
}

// approveUntil approves every published plan until want plans are
// approved (as an approver does with tfccm approve).
func approveUntil(t *testing.T, client kubernetes.Interface, want int, timeout time.Duration) {
	t.Helper()
	approved := map[string]bool{}
	eventually(t, timeout, fmt.Sprintf("%d plans approved", want), func(ctx context.Context) error {
		list, err := client.CoreV1().ConfigMaps(tfccmNamespace).List(ctx, metav1.ListOptions{LabelSelector: annotations.PlanKind + "=" + annotations.PlanOfLoadBalancer})
		if err != nil {
			return err
		}
		for _, cm := range list.Items {
			h := cm.Annotations[annotations.PlanHash]
			if h == "" || approved[h] || cm.Annotations[annotations.ApprovedPlan.Name] == h {
				continue
			}
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{annotations.ApprovedPlan.Name: h}}})
			if _, err := client.CoreV1().ConfigMaps(tfccmNamespace).Patch(ctx, cm.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err == nil {
				approved[h] = true
			}
		}
		if len(approved) < want {
			return fmt.Errorf("%d of %d approved", len(approved), want)
		}
		return nil
	})
}

// frontendsServe checks that want HAProxy fragments of the local cloud
// forward to node.
func frontendsServe(cloud *localcloud.Cloud, node string, want int) error {
	files, _ := filepath.Glob(filepath.Join(cloud.StateDir, "fragments", "*"))
	got := 0
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(" "+node+" ")) {
			got++
		}
	}
	if got < want {
		return fmt.Errorf("%d of %d frontends forward to %s", got, want, node)
	}
	return nil
}

func waitFrontendsServe(t *testing.T, cloud *localcloud.Cloud, node string, want int, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("%d frontends forwarding to %s", want, node), func(context.Context) error { return frontendsServe(cloud, node, want) })
}
