package nodes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/workspace/jobrunner"
)

// poolSelector selects the runner pool's pods (terraform.job.pool).
const poolSelector = jobrunner.LabelRunner + "=pool"

// TestRunnerPoolOnRealNodes runs tfccm from its chart with runner.pool=2
// on two real nodes: every tofu command runs in one of two warm runner
// pods (a Deployment spread over the nodes) through pods/exec, so no Job,
// no runner Secret and no pod per command is created. Three load
// balancers are applied and destroyed through the pool; one pooled pod is
// deleted (at once, its request's processes killed, as a node gone would)
// while it runs a Service's tofu apply: the CCM reports the pod gone, retries the run on the other pod
// (or its replacement), releases any state lock the pod left, and the
// Service converges; the pool is back to two pods spread over the nodes.
func TestRunnerPoolOnRealNodes(t *testing.T) {
	ic, ctx, ccmLog, _ := runnerClusterWith(t, runnerLayout("1Gi")+"  pool: 2\n")
	client, hosts := ic.client, ic.hosts
	var jobs atomic.Int64
	go countJobs(ctx, client, &jobs)
	pods := waitPoolSpreadOver(t, client, 2, 2, 3*time.Minute, ccmLog)
	t.Logf("runner pool: %v", pods)

	podNames := runNetexecDeployment(t, client, 2)
	vip := createLBService(t, client, "web", ccmLog)
	waitServes(t, vip, podNames)
	createLBService(t, client, "pool-a", ccmLog)

	// A pooled pod deleted while it applies pool-b's load balancer.
	createService(t, client, "pool-b")
	svc, err := client.CoreV1().Services("default").Get(ctx, "pool-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Its workspace names it by load_balancer_id, "<cluster>-<hash of
	// its UID>".
	id := templates.LoadBalancerID(&config.Config{ClusterName: "x"}, svc)
	pod, pid := poolPodRunning(t, client, "apply", []string{id[strings.LastIndex(id, "-")+1:]}, 3*time.Minute)
	zero := int64(0)
	if err := client.CoreV1().Pods(runnersNamespace).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	// As a node gone: the request ends now, without its result (a local
	// apply would otherwise finish before the kubelet stops the pod).
	for _, p := range []int{parentOf(pid), pid} {
		if p > 1 {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	t.Logf("deleted runner pool pod %s while it applied pool-b", pod)
	if _, err := harness.WaitForIngress(ctx, client, "default", "pool-b", 6*time.Minute); err != nil {
		t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
	}
	if !serviceEventSays(t, client, "pool-b", "Runner pod gone") {
		t.Errorf("no Event on pool-b says its runner pod was gone\nCCM log:\n%s", ccmLog())
	}
	for _, h := range hosts.Hosts {
		if n := len(h.Objects()); n != 9 {
			t.Errorf("LB host %s has %d objects, want 9 (3 load balancers × claim, frontend, VRRP instance): %v", h.Name, n, h.Objects())
		}
	}
	after := waitPoolSpreadOver(t, client, 2, 2, 3*time.Minute, ccmLog)
	if _, ok := after[pod]; ok {
		t.Errorf("the deleted pod %s is still in the pool: %v", pod, after)
	}

	for _, name := range []string{"pool-b", "pool-a"} {
		if err := client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := harness.WaitServiceDeleted(ctx, client, "default", name, 3*time.Minute); err != nil {
			t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
		}
	}
	deleteLBService(t, client, hosts, "web", vip, ccmLog)
	noHeldLocks(t, client)
	if n := jobs.Load(); n > 0 {
		t.Errorf("%d runner Jobs created with the pool", n)
	}
	secrets, err := client.CoreV1().Secrets(runnersNamespace).List(ctx, metav1.ListOptions{LabelSelector: jobrunner.LabelRunner})
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) > 0 {
		t.Errorf("%d runner Secrets with the pool, want none", len(secrets.Items))
	}
}

// countJobs counts the Jobs created in the runners' namespace until ctx
// ends.
func countJobs(ctx context.Context, client kubernetes.Interface, n *atomic.Int64) {
	seen := map[string]bool{}
	for ctx.Err() == nil {
		w, err := client.BatchV1().Jobs(runnersNamespace).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added {
				continue
			}
			if m, err := metaOf(ev.Object); err == nil && !seen[string(m.GetUID())] {
				seen[string(m.GetUID())] = true
				n.Add(1)
			}
		}
	}
}

// poolPodRunning waits until a pooled pod runs tofu cmd in the workspace
// of a Service (its rendered files hold one of svc: the hash of its UID
// in load_balancer_id) and returns the pod's name and tofu's pid.
func poolPodRunning(t *testing.T, client kubernetes.Interface, cmd string, svc []string, timeout time.Duration) (string, int) {
	t.Helper()
	var name string
	var pid int
	list, err := client.CoreV1().Pods(runnersNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: poolSelector})
	if err != nil {
		t.Fatal(err)
	}
	// Polled every 100 ms: an apply of the local set lasts seconds.
	err = testkit.Poll(context.Background(), 100*time.Millisecond, timeout, "a runner pool pod running tofu "+cmd+" for "+svc[0], func(ctx context.Context) error {
		for _, p := range harness.Processes(func(args []string) bool {
			return len(args) > 1 && strings.HasSuffix(args[0], "/tofu") && args[1] == cmd
		}) {
			cgroup, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", p))
			if err != nil || !workspaceNames(p, svc) {
				continue
			}
			for _, pod := range list.Items {
				uid := string(pod.UID)
				if strings.Contains(string(cgroup), uid) || strings.Contains(string(cgroup), strings.ReplaceAll(uid, "-", "_")) {
					name, pid = pod.Name, p
					return nil
				}
			}
		}
		return fmt.Errorf("none yet")
	})
	if err != nil {
		t.Fatal(err)
	}
	return name, pid
}

// parentOf is process pid's parent (`tfccm run --exec` for a pooled pod's
// tofu), 0 when unknown.
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// workspaceNames reports whether a file of process pid's working
// directory (its workspace) mentions one of texts.
func workspaceNames(pid int, texts []string) bool {
	dir := fmt.Sprintf("/proc/%d/cwd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		for _, text := range texts {
			if err == nil && len(b) < 1<<20 && strings.Contains(string(b), text) {
				return true
			}
		}
	}
	return false
}
