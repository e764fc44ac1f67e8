package nodes

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/test/harness"
)

// haLayout: the chart's default layout (a leader-elected two-replica
// Deployment) with host networking, which real nodes whose pod network
// tfccm routes need, and short leader-election durations.
const haLayout = `mode: deployment
replicas: 2
hostNetwork: true
leaderElection:
  enabled: true
  leaseDuration: 8s
  renewDeadline: 5s
  retryPeriod: 1s
`

// TestCCMInClusterHAOnRealNodes: the chart's two replicas on the two real
// nodes, one leader. The leader's process is killed (a crash: no lease
// released, no tofu interrupted gracefully); a replica takes the lease over
// once it expires, the Service already served keeps being served, and a
// new one gets its VIP from the new leader, with each Service's objects
// once on each LB host and one state per workspace.
func TestCCMInClusterHAOnRealNodes(t *testing.T) {
	needNodes(t)
	ctx := context.Background()
	start := time.Now()
	ic := installInCluster(t, imageArchive(t), haLayout)
	client := ic.client
	ccmLog := func() string { return ccmPodLogs(client, 40) }

	pods := waitCCMPods(t, client, 2)
	if pods[0].Spec.NodeName == pods[1].Spec.NodeName {
		t.Errorf("both replicas on %s; the chart's host port should spread them", pods[0].Spec.NodeName)
	}
	leader := waitLeaderPod(t, client, pods)
	t.Logf("replicas on %s and %s; %s leads", pods[0].Spec.NodeName, pods[1].Spec.NodeName, leader.Name)

	vip, podNames := ic.serveWeb(t, ccmLog)
	t.Logf("web served at %s %s after the start", vip, time.Since(start).Round(time.Second))

	// Crash the leader: SIGKILL its process.
	holder := leaseHolder(t, client)
	pid := ccmProcess(t, leader)
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := harness.Eventually(ctx, time.Minute, "another process holds the lease", func(ctx context.Context) error {
		if h := leaseHolder(t, client); h == holder || h == "" {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, ccmLog())
	}
	t.Logf("lease taken over %s after the leader was killed (lease duration 8 s)", time.Since(killed).Round(100*time.Millisecond))

	// The Service applied by the old leader is still served; a new one gets
	// its VIP from the new leader.
	waitServes(t, vip, podNames)
	vip2 := createLBService(t, client, "web2", ccmLog)
	if vip2 == vip {
		t.Fatalf("web2 got web's VIP %s", vip)
	}
	waitServes(t, vip2, podNames)
	t.Logf("web2 served at %s %s after the kill", vip2, time.Since(killed).Round(time.Second))

	// Each Service's claim, frontend and VRRP instance once on each host;
	// one state per workspace (no second copy from the new leader).
	for _, h := range ic.hosts.Hosts {
		if o := h.Objects(); len(o) != 6 {
			t.Errorf("LB host %s has %v, want a claim, a frontend and a VRRP instance for each of 2 Services", h.Name, o)
		}
	}
	var lbStates int
	for _, s := range stateSecrets(t, client) {
		if strings.Contains(s, `"lbhost_frontend"`) {
			lbStates++
		}
	}
	if lbStates != 2 {
		t.Errorf("%d load-balancer states in %s, want 2", lbStates, stateNamespace)
	}

	// Both go away cleanly under the new leader.
	for _, name := range []string{"web", "web2"} {
		if err := client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"web", "web2"} {
		if err := harness.WaitServiceDeleted(ctx, client, "default", name, 2*time.Minute); err != nil {
			t.Fatalf("%v\n%s", err, ccmLog())
		}
	}
	for _, h := range ic.hosts.Hosts {
		if o := h.Objects(); len(o) != 0 {
			t.Errorf("LB host %s after both Services are gone: %v", h.Name, o)
		}
	}
}

// serveWeb waits for the nodes to be initialized, Ready and routed, then
// runs the netexec Deployment "web" (one pod per node) behind a
// LoadBalancer Service "web" and returns its VIP, once it reaches both
// pods, and the pods' names.
func (ic *inCluster) serveWeb(t *testing.T, ccmLog func() string) (string, []string) {
	t.Helper()
	nodes := checkNodesInitialized(t, ic.c, ccmLog)
	waitNodesReady(t, ic.client)
	waitPodRoutes(t, ic.c, nodes)
	podNames := runNetexecDeployment(t, ic.client, 2)
	vip := createLBService(t, ic.client, "web", ccmLog)
	waitServes(t, vip, podNames)
	return vip, podNames
}

// waitCCMPods waits until the chart's n pods run and are ready.
func waitCCMPods(t *testing.T, client kubernetes.Interface, n int) []corev1.Pod {
	t.Helper()
	var ready []corev1.Pod
	err := harness.Eventually(context.Background(), 2*time.Minute, fmt.Sprintf("%d CCM pods run", n), func(ctx context.Context) error {
		pods, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: ccmSelector})
		if err != nil {
			return err
		}
		if len(pods.Items) != n {
			return fmt.Errorf("%d CCM pods", len(pods.Items))
		}
		ready = nil
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) == 0 || !p.Status.ContainerStatuses[0].Ready {
				return fmt.Errorf("pod %s on %q: phase %s, conditions %v, containers %v; events: %s", p.Name, p.Spec.NodeName, p.Status.Phase,
					p.Status.Conditions, p.Status.ContainerStatuses, harness.Events(ctx, client, "kube-system", p.Name))
			}
			ready = append(ready, *p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ready
}

// waitLeaderPod waits until exactly one of pods logs that it acquired the
// leader lease and returns it.
func waitLeaderPod(t *testing.T, client kubernetes.Interface, pods []corev1.Pod) corev1.Pod {
	t.Helper()
	var leader corev1.Pod
	err := harness.Eventually(context.Background(), time.Minute, "one replica leads", func(ctx context.Context) error {
		var leaders []string
		for _, p := range pods {
			logs, err := client.CoreV1().Pods("kube-system").GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil {
				return err
			}
			if strings.Contains(string(logs), "Successfully acquired lease") {
				leaders = append(leaders, p.Name)
				leader = p
			}
		}
		if len(leaders) != 1 {
			return fmt.Errorf("replicas that acquired the lease: %v", leaders)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return leader
}

// leaseHolder is the holder of the CCM's leader Lease ("" before one).
func leaseHolder(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	l, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), annotations.LeaderLease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// ccmProcess finds the CCM process of pod on this machine: the process
// running the CCM binary in a cgroup of the pod.
func ccmProcess(t *testing.T, pod corev1.Pod) int {
	t.Helper()
	var found []int
	for _, pid := range harness.Processes(func(args []string) bool {
		return strings.HasSuffix(args[0], "terraform-cloud-controller-manager")
	}) {
		cgroup, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err == nil && strings.Contains(string(cgroup), "pod"+string(pod.UID)) {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		t.Fatalf("CCM processes of pod %s (uid %s): %v, want one", pod.Name, pod.UID, found)
	}
	return found[0]
}

// createLBService creates a LoadBalancer Service for the "web" pods and
// returns its VIP.
func createLBService(t *testing.T, client kubernetes.Interface, name string, ccmLog func() string) string {
	t.Helper()
	ctx := context.Background()
	createService(t, client, name)
	vip, err := harness.WaitForIngress(ctx, client, "default", name, 3*time.Minute)
	if err != nil {
		t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
	}
	return vip
}

// waitServes waits until HTTP from the host through vip has reached every
// one of pods.
func waitServes(t *testing.T, vip string, pods []string) {
	t.Helper()
	seen := map[string]bool{}
	err := harness.Eventually(context.Background(), time.Minute, "GET "+vip+" from the host reaches every pod", func(ctx context.Context) error {
		host, err := httpGet(ctx, "http://"+vip+"/hostname")
		if err != nil {
			return err
		}
		if !slices.Contains(pods, host) {
			return fmt.Errorf("answered by %q, not one of %v", host, pods)
		}
		seen[host] = true
		if len(seen) < len(pods) {
			return fmt.Errorf("only %v answered so far", seen)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
