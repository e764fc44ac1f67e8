package nodes

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/workspace/jobrunner"
)

// TestJobRunnerOnRealNodes runs tfccm from its chart with runner.enabled:
// every tofu command of a workspace runs in a Job from tfccm's image on
// the two nodes (the baremetal set over SSH, state in Secrets). A
// runner's tofu killed with SIGKILL mid-apply (its state lock stays) is
// recovered: the lock is released by the CCM and the load balancer
// applied; the CCM pod deleted while a
// runner runs is replaced and its successor waits for that runner instead
// of starting a second run. An observer of every runner pod (a watch)
// fails the test if two runs of one workspace are ever alive at once.
func TestJobRunnerOnRealNodes(t *testing.T) {
	ic, ctx, ccmLog, obs := runnerCluster(t)
	client, hosts := ic.client, ic.hosts

	// A load balancer through runner Jobs.
	podNames := runNetexecDeployment(t, client, 2)
	vip := createLBService(t, client, "web", ccmLog)
	waitServes(t, vip, podNames)
	if n, nodes := obs.stats(); n < 3 || len(nodes) != 2 {
		t.Errorf("%d runner pods on nodes %v; want several, on both nodes", n, nodes)
	}

	// A runner's tofu killed with SIGKILL mid-apply: its state lock stays,
	// its result says tofu was killed.
	createService(t, client, "web2")
	pod := obs.waitPod(t, "apply", 3*time.Minute)
	pid := killLockedTofu(t, client, pod, "apply")
	t.Logf("killed tofu (pid %d) applying %s in runner pod %s", pid, pod.Annotations[jobrunner.AnnoWorkspace], pod.Name)
	if _, err := harness.WaitForIngress(ctx, client, "default", "web2", 5*time.Minute); err != nil {
		t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
	}
	// The apply failed for the CCM and was retried; the lock the killed
	// tofu left was released by the CCM itself.
	if !serviceEventSays(t, client, "web2", "tofu apply failed") {
		t.Errorf("no Event on web2 says its apply failed\nCCM log:\n%s", ccmLog())
	}
	if !strings.Contains(ccmPodLogs(client, 0), "Released a state lock its gone holder left") {
		t.Errorf("the CCM did not release the killed tofu's state lock\nCCM log:\n%s", ccmLog())
	}

	// The CCM pod deleted while a runner runs.
	createService(t, client, "web3")
	pod = obs.waitPod(t, "", 3*time.Minute)
	ccm := waitCCMPod(t, client)
	if err := client.CoreV1().Pods("kube-system").Delete(ctx, ccm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted the CCM pod %s while runner %s ran", ccm.Name, pod.Name)
	if _, err := harness.WaitForIngress(ctx, client, "default", "web3", 6*time.Minute); err != nil {
		t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
	}
	for _, h := range hosts.Hosts {
		if n := len(h.Objects()); n != 9 {
			t.Errorf("LB host %s has %d objects, want 9 (3 load balancers × claim, frontend, VRRP instance): %v", h.Name, n, h.Objects())
		}
	}
	noHeldLocks(t, client)

	for _, name := range []string{"web3", "web2"} {
		if err := client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := harness.WaitServiceDeleted(ctx, client, "default", name, 3*time.Minute); err != nil {
			t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
		}
	}
	deleteLBService(t, client, hosts, "web", vip, ccmLog)
	noHeldLocks(t, client)
	if v := obs.violations(); len(v) > 0 {
		t.Errorf("two runs of one workspace at once: %v", v)
	}
	n, _ := obs.stats()
	t.Logf("%d runner pods in all", n)
}

// createService creates the LoadBalancer Service name in default over
// the pods labelled app=web (port 80 to 8080).
func createService(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := client.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// killLockedTofu kills with SIGKILL the tofu process running cmd in
// runner pod on this machine (the nodes' containers are its processes)
// once it holds its workspace's state lock (the kubernetes backend's
// Lease has a holder), and returns its pid.
func killLockedTofu(t *testing.T, client kubernetes.Interface, pod *corev1.Pod, cmd string) int {
	t.Helper()
	ws, uid := pod.Annotations[jobrunner.AnnoWorkspace], string(pod.UID)
	var pid int
	err := harness.Eventually(context.Background(), time.Minute, "tofu "+cmd+" in "+pod.Name+" holds the lock", func(ctx context.Context) error {
		leases, err := client.CoordinationV1().Leases(stateNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		locked := false
		for _, l := range leases.Items {
			locked = locked || strings.Contains(l.Name, ws) && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != ""
		}
		if !locked {
			return fmt.Errorf("state not locked")
		}
		for _, p := range harness.Processes(func(args []string) bool {
			return len(args) > 1 && strings.HasSuffix(args[0], "/tofu") && args[1] == cmd
		}) {
			cgroup, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", p))
			if err == nil && (strings.Contains(string(cgroup), uid) || strings.Contains(string(cgroup), strings.ReplaceAll(uid, "-", "_"))) {
				if err := syscall.Kill(p, syscall.SIGKILL); err != nil {
					return err // gone meanwhile: look again
				}
				pid = p
				return nil
			}
		}
		return fmt.Errorf("no tofu %s process", cmd)
	})
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// serviceEventSays reports whether an Event on Service name mentions text.
func serviceEventSays(t *testing.T, client kubernetes.Interface, name, text string) bool {
	t.Helper()
	evs, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

// noHeldLocks fails if a workspace's state lock (the kubernetes backend's
// Lease) has a holder.
func noHeldLocks(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	leases, err := client.CoordinationV1().Leases(stateNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		if strings.HasPrefix(l.Name, "lock-tfstate") && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			t.Errorf("state lock %s is held by %s", l.Name, *l.Spec.HolderIdentity)
		}
	}
}

// runners watches every runner pod and records when two pods of one
// workspace are alive (pending, running or terminating) at once.
type runners struct {
	mu    sync.Mutex
	alive map[string]map[string]*corev1.Pod // workspace hash → pod name → pod
	seen  map[string]string                 // pod name → node
	bad   []string
}

func observeRunners(ctx context.Context, t *testing.T, client kubernetes.Interface) *runners {
	r := &runners{alive: map[string]map[string]*corev1.Pod{}, seen: map[string]string{}}
	go watchRunners(ctx, client, r.event)
	return r
}

func (r *runners) event(typ watch.EventType, p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := p.Labels[jobrunner.LabelWorkspace]
	if r.alive[ws] == nil {
		r.alive[ws] = map[string]*corev1.Pod{}
	}
	if p.Spec.NodeName != "" {
		r.seen[p.Name] = p.Spec.NodeName
	}
	if typ == watch.Deleted || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		delete(r.alive[ws], p.Name)
		return
	}
	r.alive[ws][p.Name] = p.DeepCopy()
	if len(r.alive[ws]) > 1 {
		var names []string
		for n := range r.alive[ws] {
			names = append(names, n)
		}
		r.bad = append(r.bad, fmt.Sprintf("%s: %v", p.Annotations[jobrunner.AnnoWorkspace], names))
	}
}

func (r *runners) violations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bad...)
}

// stats is the number of runner pods seen on a node and those nodes.
func (r *runners) stats() (int, map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	nodes := map[string]bool{}
	for _, n := range r.seen {
		nodes[n] = true
	}
	return len(r.seen), nodes
}

// waitPod waits for a running runner pod of a load balancer workspace
// whose tofu command is cmd ("" any).
func (r *runners) waitPod(t *testing.T, cmd string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	err := harness.Eventually(context.Background(), timeout, "a running runner pod ("+cmd+")", func(context.Context) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, pods := range r.alive {
			for _, p := range pods {
				if jobrunner.TofuRunning(p) && (cmd == "" || p.Labels[jobrunner.LabelCommand] == cmd) && strings.HasPrefix(p.Annotations[jobrunner.AnnoWorkspace], "lb-") {
					got = p
					return nil
				}
			}
		}
		return fmt.Errorf("none")
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// runnerPods describes the runner pods, for failure messages.
func runnerPods(client kubernetes.Interface) string {
	pods, err := client.CoreV1().Pods(runnersNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: jobrunner.LabelRunner + "=job"})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "%s %s %s %s created %s", p.Name, p.Labels[jobrunner.LabelCommand], p.Spec.NodeName, p.Status.Phase, p.CreationTimestamp.Format(time.TimeOnly))
		if p.DeletionTimestamp != nil {
			fmt.Fprintf(&b, " deleting")
		}
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				fmt.Fprintf(&b, "; %s: %s %s", c.Type, c.Reason, c.Message)
			}
		}
		for _, c := range jobrunner.ContainerStatuses(&p) {
			if w := c.State.Waiting; w != nil {
				fmt.Fprintf(&b, "; %s waiting: %s %s", c.Name, w.Reason, w.Message)
			}
			if x := c.State.Terminated; x != nil {
				fmt.Fprintf(&b, "; %s terminated: %s %d", c.Name, x.Reason, x.ExitCode)
			}
		}
		b.WriteString("\n")
	}
	jobs, err := client.BatchV1().Jobs(runnersNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: jobrunner.LabelRunner + "=job"})
	if err != nil {
		return b.String() + err.Error()
	}
	for _, j := range jobs.Items {
		fmt.Fprintf(&b, "Job %s created %s suspended %v active %d", j.Name, j.CreationTimestamp.Format(time.TimeOnly), j.Spec.Suspend != nil && *j.Spec.Suspend, j.Status.Active)
		for _, c := range j.Status.Conditions {
			fmt.Fprintf(&b, "; %s=%s %s", c.Type, c.Status, c.Reason)
		}
		b.WriteString("\n")
	}
	return b.String()
}
