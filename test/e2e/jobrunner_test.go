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

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
)

// TestJobRunnerPodRefused: with runner Jobs in a namespace that enforces
// Pod Security's baseline level, and the admin's hostPath plugin cache
// (which needs privileged), the Job controller cannot create a runner pod.
// The CCM fails the run within a minute with a Warning Event on the
// Service that names the admission error, instead of waiting out the
// Job's deadline, and leaves no runner Job behind. Only kube-apiserver and
// kube-controller-manager's Job controller run: no node, no pod runs.
func TestJobRunnerPodRefused(t *testing.T) {
	cluster := devcluster.ForTestWith(t, devcluster.Options{Controllers: []string{"job-controller", "garbage-collector-controller"}})
	client := cluster.Client()
	ctx := context.Background()
	const ns = "tfccm-runners"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "tfccm-runner"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	override := t.TempDir()
	if err := os.MkdirAll(filepath.Join(override, "loadbalancer"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(override, "loadbalancer"), "main.tf", fmt.Sprintf(markerModule, filepath.Join(t.TempDir(), "destroyed")))
	blocks := fmt.Sprintf("override_dir = %q\n", override) +
		fmt.Sprintf("backend \"kubernetes\" {\n  config_path = %q\n  namespace   = \"default\"\n}\n", cluster.Kubeconfig())
	job := fmt.Sprintf("runner = \"job\"\n  job {\n    namespace    = %q\n    image        = \"tfccm:test\"\n    plugin_cache = \"/var/cache/tfccm/plugins\"\n  }", ns)
	cfg, _ := writeCloudConfig(t, t.TempDir(), blocks, job)
	ccm, err := harness.StartCCM(harness.CCMOptions{
		Binary: ccmBinary(t), Kubeconfig: cluster.Kubeconfig(), CloudConfig: cfg, Dir: t.TempDir(),
		// The stand-in reaches the apiserver as the CCM does.
		Env: []string{"PATH=" + filepath.Join(repoRoot(t), "bin") + ":" + os.Getenv("PATH"), "KUBECONFIG=" + cluster.Kubeconfig()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ccm.Stop()
		if t.Failed() {
			t.Logf("CCM log (%s), last 60 lines:\n%s", ccm.LogPath, ccm.LogTail(60))
		}
	})
	registerNode(t, client, harness.Node{Name: "node-a", InternalIPs: []string{"10.250.0.2"}})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}}}}
	start := time.Now()
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const want = `violates PodSecurity "baseline:latest": hostPath volumes (volume "plugin-cache")`
	eventually(t, time.Minute, "a Warning Event on the Service naming the admission error", func(ctx context.Context) error {
		if evs := harness.Events(ctx, client, "default", "web"); !strings.Contains(evs, "Runner pod refused") || !strings.Contains(evs, want) {
			return fmt.Errorf("events: %s", evs)
		}
		return nil
	})
	t.Logf("the refusal reached the Service's Events %v after it was created", time.Since(start).Round(time.Millisecond))
	// No pod was ever admitted, and the refused Jobs do not linger (the
	// engine retries with new ones): none seen now is there 15 s later.
	jobs, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(15 * time.Second)
	for _, j := range jobs.Items {
		if _, err := client.BatchV1().Jobs(ns).Get(ctx, j.Name, metav1.GetOptions{}); err == nil {
			t.Errorf("refused Job %s is still there 15 s later", j.Name)
		}
	}
	if pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil || len(pods.Items) > 0 {
		t.Errorf("runner pods admitted: %v, %v", pods, err)
	}
}
