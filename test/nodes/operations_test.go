package nodes

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/harness"
)

// uninstallLayout: one replica with host networking on node-a.
const uninstallLayout = "mode: deployment\nreplicas: 1\nhostNetwork: true\nnodeSelector:\n  kubernetes.io/hostname: node-a\n"

// TestOperationsOnRealNodes runs docs/operations.md's day-2 commands from
// the workstation as the kubectl plugin — kubectl tfccm workspaces (the
// Service's workspace Applied, its lock free) and unlock --dry-run, which
// run in the leader's pod, status (the leader, the Service Applied) and
// services — and tfccm state query in the chart's shell-less pod with
// kubectl exec; then its uninstall: `helm
// uninstall` while tfccm serves a LoadBalancer Service is refused by the chart's pre-delete hook (a Job
// running `tfccm services --uninstall=refuse` from the image, whose log
// names the Service); the Service stays served, and once it is deleted the
// uninstall goes through. Installed again with
// uninstall.loadBalancers=delete, the uninstall deletes the Service, waits
// for tfccm to destroy its load balancer, and leaves nothing on the LB
// hosts and no Service Terminating.
func TestOperationsOnRealNodes(t *testing.T) {
	needNodes(t)
	ctx := context.Background()
	ic := installInCluster(t, imageArchive(t), uninstallLayout)
	client := ic.client
	ccmLog := func() string { return ccmPodLogs(client, 40) }
	waitCCMPod(t, client)
	nodes := checkNodesInitialized(t, ic.c, ccmLog)
	waitPodRoutes(t, ic.c, nodes)
	vip := createLBService(t, client, "web", ccmLog)

	// Day 2 from the workstation: kubectl tfccm finds the leader through
	// its Lease and runs what only the leader knows (its work_dir, its
	// tofu) in the leader's pod; status and services read the cluster.
	kt := kubectlTfccm(t, ic.c)
	out := kt("workspaces", "--tfccm-namespace=kube-system", "--locks")
	line := regexp.MustCompile(`(?m)^(lb-\S+)\s+Applied\s+default/web\s+-\s*$`).FindStringSubmatch(out)
	if line == nil || !regexp.MustCompile(`(?m)^routes\s+Applied\s+\(routes\)\s+-\s*$`).MatchString(out) {
		t.Errorf("kubectl tfccm workspaces: want web's workspace and routes Applied, unlocked:\n%s", out)
	} else {
		out = kt("unlock", "--tfccm-namespace=kube-system", "--workspace="+line[1], "--dry-run")
		if !strings.Contains(out, "the state is not locked") {
			t.Errorf("kubectl tfccm unlock --dry-run:\n%s", out)
		}
	}
	out = kt("status", "--tfccm-namespace=kube-system")
	t.Logf("kubectl tfccm status:\n%s", out)
	for _, want := range []string{"Leader:     pod tfccm-", "Pod:        Running on node node-a", "Services:   1 served: 1 Applied", "No plans awaiting approval"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl tfccm status lacks %q:\n%s", want, out)
		}
	}
	out = kt("services")
	if !regexp.MustCompile(`(?m)^default\s+web\s+` + regexp.QuoteMeta(vip) + `\s+true\s*$`).MatchString(out) {
		t.Errorf("kubectl tfccm services:\n%s", out)
	}
	// What needs the cloud config's state sources still runs in the pod: no shell, only the image's tfccm.
	out = kubectlExec(t, ic.c, "tfccm", "state", "query", "--config=/etc/tfccm/config/cloud.hcl")
	if !strings.Contains(out, "node-a") || !strings.Contains(out, "node-b") {
		t.Errorf("tfccm state query in the pod:\n%s", out)
	}

	// Uninstall.

	hout, err := ic.rel.Helm("uninstall", ic.rel.Name, "--wait", "--timeout", "3m")
	if err == nil {
		t.Fatalf("helm uninstall with a served Service succeeded:\n%s", hout)
	}
	t.Logf("helm uninstall refused: %s", strings.TrimSpace(string(hout)))
	if !strings.Contains(string(hout), "tfccm-uninstall") {
		t.Errorf("helm uninstall's error does not name the hook Job:\n%s", hout)
	}
	hookLog := podLogs(client, "app.kubernetes.io/name=tfccm-uninstall", 0)
	if !strings.Contains(hookLog, "default/web") || !strings.Contains(hookLog, "tfccm serves 1 LoadBalancer Service") {
		t.Errorf("the hook's log does not name the Service:\n%s", hookLog)
	}
	svc, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || svc.DeletionTimestamp != nil {
		t.Fatalf("after the refused uninstall the Service is %v (%v)", svc, err)
	}
	if ic.hosts.Master(vip) == nil {
		t.Errorf("after the refused uninstall no LB host holds %s", vip)
	}
	waitCCMPod(t, client) // still running

	// The release is "uninstalling" now: delete the Service (tfccm, still
	// running, destroys its load balancer) and uninstall again.
	if err := client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitServiceDeleted(ctx, client, "default", "web", 2*time.Minute); err != nil {
		t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
	}
	if err := ic.rel.Uninstall(3 * time.Minute); err != nil {
		t.Fatal(err)
	}
	noLoadBalancer(t, ic.hosts, vip, "after the uninstall")

	// uninstall.loadBalancers=delete: helm uninstall deletes the Service
	// and returns once tfccm destroyed its load balancer.
	values, err := inClusterValues(ic.c, ic.hosts, ic.ref, uninstallLayout+"uninstall: {loadBalancers: delete, timeoutSeconds: 240}\n")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := harness.InstallChart(ic.c.Kubeconfig(), "kube-system", "tfccm", values, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rel.Uninstall(2 * time.Minute) })
	waitCCMPod(t, client)
	vip = createLBService(t, client, "web", ccmLog)
	start := time.Now()
	if err := rel.Uninstall(5 * time.Minute); err != nil {
		t.Fatalf("%v\nhook log:\n%s\nCCM log:\n%s", err, podLogs(client, "app.kubernetes.io/name=tfccm-uninstall", 40), ccmLog())
	}
	t.Logf("helm uninstall with uninstall.loadBalancers=delete took %s", time.Since(start).Round(time.Second))
	if _, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{}); err == nil {
		t.Error("the Service is still there after the uninstall")
	}
	noLoadBalancer(t, ic.hosts, vip, "after the uninstall")
}

// noLoadBalancer checks that no LB host has any object or holds vip.
func noLoadBalancer(t *testing.T, hosts *hosttest.Hosts, vip, when string) {
	t.Helper()
	for _, h := range hosts.Hosts {
		if o := h.Objects(); len(o) != 0 || h.HasAddress(vip) {
			t.Errorf("LB host %s %s: objects %v, holds the VIP %v", h.Name, when, o, h.HasAddress(vip))
		}
	}
}

// kubectlTfccm installs the repository's tfccm as the kubectl plugin
// kubectl-tfccm and returns a function running `kubectl tfccm ARGS` from
// the workstation with the cluster's admin kubeconfig.
func kubectlTfccm(t *testing.T, c *Cluster) func(args ...string) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := repo.Build(t, "./cmd/tfccm")
	if err := os.Symlink(bin, filepath.Join(filepath.Dir(bin), "kubectl-tfccm")); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, "bin", "kubectl"), append([]string{"tfccm"}, args...)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("kubectl tfccm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}

// kubectlExec runs argv in the chart's Deployment with the repository's
// kubectl (kubectl exec deploy/tfccm -- argv) and returns its output.
func kubectlExec(t *testing.T, c *Cluster, argv ...string) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--kubeconfig", c.Kubeconfig(), "-n", "kube-system", "exec", "deploy/tfccm", "--"}, argv...)
	out, err := exec.Command(filepath.Join(root, "bin", "kubectl"), args...).CombinedOutput()
	if err != nil {
		t.Errorf("kubectl exec deploy/tfccm -- %s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}
