package nodes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/deploy"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/workspace/jobrunner"
)

// runnerLayout is the chart's layout of the job runner tests: the CCM on
// node-a, runner pods anywhere, with memoryLimit (the chart's value
// runner.memoryLimit, terraform.job.memory_limit; below 1Gi the memory
// request too).
// oomLimit is a runner memory limit too small for tofu. 48Mi no longer
// is: with providers started without mTLS (and other changes of the same
// day) this test's plan and apply fit in it.
const oomLimit = "24Mi"

func runnerLayout(memoryLimit string) string {
	request := "256Mi" // the chart's; a request may not exceed the limit
	if memoryLimit != "1Gi" {
		request = memoryLimit
	}
	return "mode: deployment\nreplicas: 1\nhostNetwork: true\nnodeSelector:\n  kubernetes.io/hostname: node-a\nrunner:\n  enabled: true\n  hostNetwork: true\n  memory: " + request + "\n  memoryLimit: " + memoryLimit + "\n"
}

// runnerCluster installs tfccm from its chart with runner Jobs (limit
// 1Gi) on two real nodes and waits until the nodes are initialized and
// their pod ranges routed. It returns the install, a context ended with
// the test, the CCM's log (with the runner pods) and the watch that
// records two runs of one workspace at once.
func runnerCluster(t *testing.T) (*inCluster, context.Context, func() string, *runners) {
	t.Helper()
	return runnerClusterWith(t, runnerLayout("1Gi"))
}

// runnerClusterWith is runnerCluster with chart values layout.
func runnerClusterWith(t *testing.T, layout string) (*inCluster, context.Context, func() string, *runners) {
	t.Helper()
	needNodes(t)
	ic := installInCluster(t, imageArchive(t), layout)
	client := ic.client
	ccmLog := func() string { return ccmPodLogs(client, 60) + "\nrunner pods:\n" + runnerPods(client) }
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	obs := observeRunners(ctx, t, client)
	waitCCMPod(t, client)
	nodes := checkNodesInitialized(t, ic.c, ccmLog)
	waitNodesReady(t, client)
	waitPodRoutes(t, ic.c, nodes)
	if t.Failed() {
		t.FailNow()
	}
	return ic, ctx, ccmLog, obs
}

// A planned kill: the Service whose load balancer's runner is killed, the
// tofu command it is killed in, and whether only its tofu is killed or
// every process of the pod (the runner itself too: no result at all).
type plannedKill struct {
	svc, cmd string
	pod      bool
}

// TestJobRunnerKillsOnRealNodes kills runners ten times with SIGKILL, at
// init, plan and apply, over five Services, half of them the whole pod
// (the runner gets no result), half only its tofu (the runner reports
// tofu killed): at plan and apply only once tofu holds the state lock.
// Every load balancer ends applied (its VIP serves, the change of each
// Service's ports too), every lock is released by the CCM (none held at
// the end, one release logged per lock a kill left), no two runs of one
// workspace are ever alive at once, and once the Services are deleted
// nothing of theirs is left: no HAProxy frontend, VIP claim or
// keepalived instance on the LB hosts, no VIP held, no runner Job.
func TestJobRunnerKillsOnRealNodes(t *testing.T) {
	start := time.Now()
	ic, ctx, ccmLog, obs := runnerCluster(t)
	client, hosts := ic.client, ic.hosts
	podNames := runNetexecDeployment(t, client, 2)
	t.Logf("cluster up %s after the start", time.Since(start).Round(time.Second))

	k := &killer{t: t, client: client, ws: map[string]string{}}
	created := []plannedKill{
		// A new load balancer's first apply plans itself: no plan to kill.
		{"kill-a", "init", false}, {"kill-b", "apply", true}, {"kill-c", "apply", false}, {"kill-d", "init", true}, {"kill-e", "apply", true},
	}
	updated := []plannedKill{
		{"kill-a", "plan", false}, {"kill-b", "apply", false}, {"kill-c", "plan", true}, {"kill-d", "apply", false}, {"kill-e", "plan", false},
	}

	// Round 1: five new Services, each runner killed once while the load
	// balancer is created.
	phase := time.Now()
	k.round(created, func(name string) { createService(t, client, name) }, func(name string) { togglePort(t, client, name) })
	vips := map[string]string{}
	for _, p := range created {
		vip, err := harness.WaitForIngress(ctx, client, "default", p.svc, 6*time.Minute)
		if err != nil {
			t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
		}
		vips[p.svc] = vip
	}
	for _, p := range created {
		waitServes(t, vips[p.svc], podNames)
	}
	t.Logf("round 1 (%d kills while creating) converged in %s", len(created), time.Since(phase).Round(time.Second))

	// Round 2: each Service gets a second port; its runner is killed
	// once more while that change is applied.
	phase = time.Now()
	k.round(updated, func(name string) { togglePort(t, client, name) }, func(name string) { togglePort(t, client, name) })
	for _, p := range updated {
		waitPort(t, vips[p.svc], wantExtraPort(t, client, p.svc), ccmLog)
	}
	t.Logf("round 2 (%d kills while changing) converged in %s", len(updated), time.Since(phase).Round(time.Second))
	if t.Failed() {
		t.FailNow()
	}

	kills, byCmd, locked := k.stats()
	if kills != 10 || byCmd["apply"] < 3 || byCmd["plan"] < 3 {
		t.Errorf("%d kills (%v), want 10 with at least 3 at plan and 3 at apply", kills, byCmd)
	}
	for _, h := range hosts.Hosts {
		if n := len(h.Objects()); n != 3*len(created) {
			t.Errorf("LB host %s has %d objects, want %d (%d load balancers × claim, frontend, VRRP instance): %v", h.Name, n, 3*len(created), len(created), h.Objects())
		}
	}
	waitNoHeldLocks(t, client)
	logs := ccmPodLogs(client, 0)
	released := strings.Count(logs, "Released a state lock its gone holder left")
	t.Logf("health probes that failed: %d", strings.Count(logs, "Could not read the load balancer's backend health"))
	if released < locked {
		t.Errorf("%d state lock releases logged, want at least %d (one per kill of a tofu holding the lock)\nCCM log:\n%s", released, locked, ccmLog())
	}
	// A pass applies the plan it has just saved: no apply ever runs
	// without it (once seen after a tofu killed at plan).
	if lines := logLinesWith(logs, "as a plan file"); len(lines) > 0 {
		t.Errorf("%d CCM log lines say an apply ran without its saved plan:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	// A plan that said "changes" without saving one (a crashed tofu or
	// stand-in) fails at plan and is retried; its output is logged.
	for _, l := range append(logLinesWith(logs, "saved no plan"), logLinesWith(logs, "Saved plan missing")...) {
		t.Logf("%s", l)
	}

	// What users saw: the Warning Events of the kills.
	evs, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "type=Warning"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		t.Logf("Event on %s: %s ×%d: %.400s", e.InvolvedObject.Name, e.Reason, e.Count, e.Message)
	}

	// Every Service deleted: nothing of theirs is left anywhere.
	phase = time.Now()
	for _, p := range created {
		if err := client.CoreV1().Services("default").Delete(ctx, p.svc, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range created {
		if err := harness.WaitServiceDeleted(ctx, client, "default", p.svc, 4*time.Minute); err != nil {
			t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
		}
	}
	for _, p := range created {
		noLoadBalancer(t, hosts, vips[p.svc], "after every Service is gone")
	}
	t.Logf("%d Services deleted in %s", len(created), time.Since(phase).Round(time.Second))
	waitNoHeldLocks(t, client)
	noRunnerJobs(t, client)
	if v := obs.violations(); len(v) > 0 {
		t.Errorf("two runs of one workspace at once: %v", v)
	}
	n, _ := obs.stats()
	t.Logf("%d kills (%v; %d holding the state lock), %d lock releases logged, %d runner pods in all, %s in all",
		kills, byCmd, locked, released, n, time.Since(start).Round(time.Second))
}

// killer kills runners of Services' load balancers as planned.
type killer struct {
	t      *testing.T
	client kubernetes.Interface
	mu     sync.Mutex
	ws     map[string]string // Service → its load balancer's workspace
	done   []string          // "svc cmd how" of each kill made
	locked int               // kills of a tofu that held the state lock
}

// round starts each plan's run with trigger (concurrently) and kills its
// runner at the planned command. A run the killer misses (its command
// ended before the lock could be seen) is started again with retrigger.
func (k *killer) round(plan []plannedKill, trigger, retrigger func(name string)) {
	var wg sync.WaitGroup
	for _, p := range plan {
		trigger(p.svc)
		k.workspace(p.svc)
		wg.Go(func() {
			for attempt := range 3 {
				if attempt > 0 {
					k.t.Logf("missed the %s of %s; changing it again", p.cmd, p.svc)
					retrigger(p.svc)
				}
				if k.kill(p) {
					return
				}
			}
			k.t.Errorf("could not kill the runner of %s at %s in 3 attempts", p.svc, p.cmd)
		})
	}
	wg.Wait()
}

// workspace is Service name's load balancer workspace.
func (k *killer) workspace(name string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ws, ok := k.ws[name]; ok {
		return ws
	}
	svc, err := k.client.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	k.ws[name] = templates.LoadBalancerWorkspaceName(&config.Config{ClusterName: "incluster"}, svc)
	return k.ws[name]
}

// kill waits for a runner pod of p's workspace running p.cmd and kills
// it with SIGKILL mid-command; false when the command ended first. An
// init is killed as soon as its tofu runs; a plan or an apply once its
// tofu holds the workspace's state lock.
func (k *killer) kill(p plannedKill) bool {
	ws := k.workspace(p.svc)
	var killed []int
	var pod *corev1.Pod
	// A new workspace's first command: init where the engine runs one,
	// else the apply it starts with (a plan in review mode).
	first := p.cmd == "init"
	err := harness.Eventually(context.Background(), 3*time.Minute, fmt.Sprintf("tofu %s of %s runs", p.cmd, p.svc), func(ctx context.Context) error {
		if pod == nil {
			pods, err := k.client.CoreV1().Pods(runnersNamespace).List(ctx, metav1.ListOptions{LabelSelector: jobrunner.LabelRunner + "=job"})
			if err != nil {
				return err
			}
			for i := range pods.Items {
				q := &pods.Items[i]
				cmd := q.Labels[jobrunner.LabelCommand]
				if q.Annotations[jobrunner.AnnoWorkspace] == ws && jobrunner.TofuRunning(q) &&
					(cmd == p.cmd || first && (cmd == "plan" || cmd == "apply")) {
					pod = q
					p.cmd = cmd
				}
			}
			if pod == nil {
				return fmt.Errorf("no running runner pod")
			}
		}
		tofu := podProcesses(pod.UID, func(args []string) bool {
			return len(args) > 1 && strings.HasSuffix(args[0], "/tofu") && args[1] == p.cmd
		})
		if len(tofu) == 0 {
			if cur, err := k.client.CoreV1().Pods(runnersNamespace).Get(ctx, pod.Name, metav1.GetOptions{}); err != nil || !jobrunner.TofuRunning(cur) {
				pod = nil // ended first: the next run of the command
				return errMissed
			}
			return fmt.Errorf("no tofu %s process in %s yet", p.cmd, pod.Name)
		}
		if p.cmd != "init" && !lockHeld(ctx, k.client, ws) {
			return fmt.Errorf("tofu %s in %s does not hold the lock yet", p.cmd, pod.Name)
		}
		victims := tofu
		if p.pod {
			victims = podProcesses(pod.UID, func(args []string) bool { return filepath.Base(args[0]) != "pause" })
		}
		for _, pid := range victims {
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				killed = append(killed, pid)
			}
		}
		if len(killed) == 0 {
			return fmt.Errorf("tofu %s in %s gone meanwhile", p.cmd, pod.Name)
		}
		return nil
	})
	if err != nil {
		k.t.Logf("%v\nrunner pods:\n%s", err, runnerPods(k.client))
		return false
	}
	how := "tofu"
	if p.pod {
		how = "pod"
	}
	k.mu.Lock()
	k.done = append(k.done, p.svc+" "+p.cmd+" "+how)
	if p.cmd != "init" {
		k.locked++
	}
	k.mu.Unlock()
	k.t.Logf("killed the %s of %s at %s (SIGKILL to %v in runner pod %s on %s)", how, p.svc, p.cmd, killed, pod.Name, pod.Spec.NodeName)
	return true
}

// errMissed: the runner pod ended before it could be killed.
var errMissed = errors.New("the runner pod ended before its kill")

// stats: how many kills, by command, and how many left a state lock.
func (k *killer) stats() (int, map[string]int, int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	by := map[string]int{}
	for _, d := range k.done {
		by[strings.Fields(d)[1]]++
	}
	return len(k.done), by, k.locked
}

// podProcesses are this machine's processes of pod (their cgroup names
// its UID) whose arguments match.
func podProcesses(uid types.UID, match func(args []string) bool) []int {
	id := string(uid)
	var out []int
	for _, pid := range harness.Processes(match) {
		cgroup, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err == nil && (strings.Contains(string(cgroup), id) || strings.Contains(string(cgroup), strings.ReplaceAll(id, "-", "_"))) {
			out = append(out, pid)
		}
	}
	return out
}

// lockHeld reports whether workspace ws's state lock (the kubernetes
// backend's Lease) has a holder.
func lockHeld(ctx context.Context, client kubernetes.Interface, ws string) bool {
	leases, err := client.CoordinationV1().Leases(stateNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, l := range leases.Items {
		if strings.HasPrefix(l.Name, "lock-tfstate") && strings.Contains(l.Name, ws) && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			return true
		}
	}
	return false
}

// extraPort is the second port togglePort adds to a Service and removes.
const extraPort = 81

// togglePort adds the port extraPort (to the pods' 8080) to Service name,
// or removes it when it has it: a change its load balancer applies.
func togglePort(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		svc, err := client.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == extraPort })
		if i >= 0 {
			svc.Spec.Ports = slices.Delete(svc.Spec.Ports, i, i+1)
		} else {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "extra", Port: extraPort, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP})
		}
		_, err = client.CoreV1().Services("default").Update(context.Background(), svc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Error(err)
	}
}

// wantExtraPort reports whether Service name has the port extraPort.
func wantExtraPort(t *testing.T, client kubernetes.Interface, name string) bool {
	t.Helper()
	svc, err := client.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == extraPort })
}

// waitPort waits until vip answers HTTP on extraPort when want, and
// refuses it when not.
func waitPort(t *testing.T, vip string, want bool, ccmLog func() string) {
	t.Helper()
	url := fmt.Sprintf("http://%s:%d/hostname", vip, extraPort)
	err := harness.Eventually(context.Background(), 5*time.Minute, fmt.Sprintf("%s answers: %v", url, want), func(ctx context.Context) error {
		_, err := httpGet(ctx, url)
		if (err == nil) != want {
			return fmt.Errorf("GET %s: %v", url, err)
		}
		return nil
	})
	if err != nil {
		t.Errorf("%v\nCCM log:\n%s", err, ccmLog())
	}
}

// noRunnerJobs waits until no runner Job is left (each run deletes its
// own; with it go its pods and Secrets).
func noRunnerJobs(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	err := harness.Eventually(context.Background(), 2*time.Minute, "no runner Job is left", func(ctx context.Context) error {
		jobs, err := client.BatchV1().Jobs(runnersNamespace).List(ctx, metav1.ListOptions{LabelSelector: jobrunner.LabelRunner + "=job"})
		if err != nil {
			return err
		}
		secrets, err := client.CoreV1().Secrets(runnersNamespace).List(ctx, metav1.ListOptions{LabelSelector: jobrunner.LabelRunner + "=job"})
		if err != nil {
			return err
		}
		if len(jobs.Items)+len(secrets.Items) > 0 {
			var names []string
			for _, j := range jobs.Items {
				names = append(names, "Job "+j.Name)
			}
			for _, s := range secrets.Items {
				names = append(names, "Secret "+s.Name)
			}
			return fmt.Errorf("left: %v", names)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// TestJobRunnerDrainAndOOMOnRealNodes: a node drained while its runner
// applies (kubectl drain: the runner pod evicted) has the run retried on
// the other node, its lock released, its load balancer serving. Runners
// with a memory limit too small for tofu (runner.memoryLimit oomLimit, real
// OOM kills by the kernel) leave a Warning Event on the Service naming
// terraform.job.memory_limit and nothing on the LB hosts; once the limit
// is raised (helm upgrade) the load balancer applies. The CCM restarted by
// that upgrade deletes the runner Job its predecessor left.
func TestJobRunnerDrainAndOOMOnRealNodes(t *testing.T) {
	start := time.Now()
	ic, ctx, ccmLog, obs := runnerCluster(t)
	client, hosts := ic.client, ic.hosts
	runs := watchRunnerPods(ctx, client)
	if _, err := client.AppsV1().Deployments("default").Create(ctx, NetexecDeployment("web", 2, corev1.ScheduleAnyway), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []string{"node-a", "node-b"} {
			_ = cordon(client, n, false)
		}
	})
	t.Logf("cluster up %s after the start", time.Since(start).Round(time.Second))

	// node-b drained while a runner on it applies: node-a cordoned until
	// then so that the runner lands on node-b.
	phase := time.Now()
	if err := cordon(client, "node-a", true); err != nil {
		t.Fatal(err)
	}
	createService(t, client, "drain")
	ws := serviceWorkspace(t, client, "drain")
	pod := runs.waitRunning(t, ws, "apply", 4*time.Minute)
	if pod.Spec.NodeName != "node-b" {
		t.Fatalf("the apply runs on %s, want node-b (node-a cordoned)", pod.Spec.NodeName)
	}
	waitLock(t, client, ws)
	if err := cordon(client, "node-a", false); err != nil {
		t.Fatal(err)
	}
	drained := time.Now()
	out, err := kubectl(ic.c, "drain", "node-b", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=3m")
	if err != nil {
		t.Fatalf("kubectl drain node-b: %v\n%s", err, out)
	}
	t.Logf("drained node-b while runner %s applied (drain took %s)", pod.Name, time.Since(drained).Round(time.Second))
	vip, err := harness.WaitForIngress(ctx, client, "default", "drain", 6*time.Minute)
	if err != nil {
		t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
	}
	if after := runs.nodesAfter(ws, drained); !slices.Equal(after, []string{"node-a"}) {
		t.Errorf("runner pods of the drained workspace after the drain ran on %v, want node-a only", after)
	}
	waitServes(t, vip, webPods(t, client))
	waitNoHeldLocks(t, client)
	if !serviceEventSays(t, client, "drain", "Runner pod evicted") {
		t.Errorf("no Event on drain says its runner pod was evicted: %s", harness.Events(ctx, client, "default", "drain"))
	}
	if out, err := kubectl(ic.c, "uncordon", "node-b"); err != nil {
		t.Fatalf("kubectl uncordon node-b: %v\n%s", err, out)
	}
	t.Logf("drain: retried on node-a and served %s after the drain (%s for the whole drain scenario)", time.Since(drained).Round(time.Second), time.Since(phase).Round(time.Second))

	// Runners out of memory.
	phase = time.Now()
	before := map[string]int{}
	for _, h := range hosts.Hosts {
		before[h.Name] = len(h.Objects())
	}
	ccm := waitCCMPod(t, client)
	upgrade := func(limit string) {
		values, err := inClusterValues(ic.c, hosts, ic.ref, runnerLayout(limit))
		if err != nil {
			t.Fatal(err)
		}
		root, err := repo.Root()
		if err != nil {
			t.Fatal(err)
		}
		if err := ic.rel.Upgrade(filepath.Join(root, deploy.Chart), values); err != nil {
			t.Fatal(err)
		}
		ccm = waitNewCCMPod(t, client, ccm.Name)
	}
	upgrade(oomLimit)
	// A Job its CCM left behind (never started): the next CCM deletes it.
	leftover := leftoverJob(t, client, runs)
	createService(t, client, "oom")
	err = harness.Eventually(ctx, 5*time.Minute, "an Event on oom names terraform.job.memory_limit", func(ctx context.Context) error {
		if serviceEventSays(t, client, "oom", "raise terraform.job.memory_limit") {
			return nil
		}
		return fmt.Errorf("events: %s", harness.Events(ctx, client, "default", "oom"))
	})
	if err != nil {
		t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
	}
	evs, _ := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=oom"})
	for _, e := range evs.Items {
		if strings.Contains(e.Message, "memory_limit") {
			if e.Type != corev1.EventTypeWarning || !strings.Contains(e.Message, "Runner out of memory") || !strings.Contains(e.Message, oomLimit) {
				t.Errorf("Event %s %s: %q; want a Warning saying the runner ran out of memory at %s", e.Type, e.Reason, e.Message, oomLimit)
			}
			t.Logf("Event %s %s: %s", e.Type, e.Reason, e.Message)
			break
		}
	}
	t.Logf("runner containers OOMKilled so far: %d", runs.oomKilled())
	for _, h := range hosts.Hosts {
		if n := len(h.Objects()); n != before[h.Name] {
			t.Errorf("LB host %s has %d objects while oom's runners run out of memory, had %d: %v", h.Name, n, before[h.Name], h.Objects())
		}
	}
	if s, err := client.CoreV1().Services("default").Get(ctx, "oom", metav1.GetOptions{}); err != nil || len(s.Status.LoadBalancer.Ingress) > 0 {
		t.Errorf("oom: %v, ingress %v while its runners run out of memory", err, s.Status.LoadBalancer.Ingress)
	}
	// The leftover is older than the CCM's sweep age by the next start.
	if wait := time.Until(leftover.CreationTimestamp.Add(70 * time.Second)); wait > 0 {
		time.Sleep(wait)
	}
	raised := time.Now()
	upgrade("1Gi")
	oomVIP, err := harness.WaitForIngress(ctx, client, "default", "oom", 6*time.Minute)
	if err != nil {
		t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
	}
	waitServes(t, oomVIP, webPods(t, client))
	t.Logf("oom: applied %s after the limit was raised (%s for the whole out-of-memory scenario)", time.Since(raised).Round(time.Second), time.Since(phase).Round(time.Second))
	err = harness.Eventually(ctx, 2*time.Minute, "the leftover Job "+leftover.Name+" is deleted by the new CCM", func(ctx context.Context) error {
		if _, err := client.BatchV1().Jobs(runnersNamespace).Get(ctx, leftover.Name, metav1.GetOptions{}); err == nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	if !strings.Contains(ccmPodLogs(client, 0), "Deleted runner Jobs an earlier incarnation left") {
		t.Errorf("the CCM did not log the deletion of the leftover Job\nCCM log:\n%s", ccmLog())
	}

	waitNoHeldLocks(t, client)
	for _, name := range []string{"drain", "oom"} {
		if err := client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"drain", "oom"} {
		if err := harness.WaitServiceDeleted(ctx, client, "default", name, 4*time.Minute); err != nil {
			t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
		}
	}
	for _, v := range []string{vip, oomVIP} {
		noLoadBalancer(t, hosts, v, "after every Service is gone")
	}
	waitNoHeldLocks(t, client)
	noRunnerJobs(t, client)
	if v := obs.violations(); len(v) > 0 {
		t.Errorf("two runs of one workspace at once: %v", v)
	}
	t.Logf("%s in all", time.Since(start).Round(time.Second))
}

// runnerPodLog records every runner pod seen (a watch): its workspace,
// command and node, when it was first seen, whether it was OOMKilled.
type runnerPodLog struct {
	mu   sync.Mutex
	pods map[string]*seenRunner
}

type seenRunner struct {
	ws, cmd, node, owner string
	first                time.Time
	running              bool
	oom                  bool
	pod                  *corev1.Pod
}

func watchRunnerPods(ctx context.Context, client kubernetes.Interface) *runnerPodLog {
	r := &runnerPodLog{pods: map[string]*seenRunner{}}
	go watchRunners(ctx, client, func(_ watch.EventType, p *corev1.Pod) { r.record(p) })
	return r
}

// watchRunners calls seen with every event of a runner pod until ctx
// ends (watching again when a watch ends).
func watchRunners(ctx context.Context, client kubernetes.Interface, seen func(watch.EventType, *corev1.Pod)) {
	for ctx.Err() == nil {
		w, err := client.CoreV1().Pods(runnersNamespace).Watch(ctx, metav1.ListOptions{LabelSelector: jobrunner.LabelRunner + "=job"})
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				seen(ev.Type, p)
			}
		}
	}
}

func (r *runnerPodLog) record(p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.pods[p.Name]
	if s == nil {
		s = &seenRunner{ws: p.Annotations[jobrunner.AnnoWorkspace], cmd: p.Labels[jobrunner.LabelCommand], owner: p.Labels[jobrunner.LabelOwner], first: time.Now()}
		r.pods[p.Name] = s
	}
	if p.Spec.NodeName != "" {
		s.node = p.Spec.NodeName
	}
	s.running = jobrunner.TofuRunning(p)
	for _, st := range jobrunner.ContainerStatuses(p) {
		if st.State.Terminated != nil && st.State.Terminated.Reason == "OOMKilled" {
			s.oom = true
		}
	}
	s.pod = p.DeepCopy()
}

// waitRunning waits for a running runner pod of workspace ws running cmd.
func (r *runnerPodLog) waitRunning(t *testing.T, ws, cmd string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	err := harness.Eventually(context.Background(), timeout, "a runner pod running tofu "+cmd+" for "+ws, func(context.Context) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, s := range r.pods {
			if s.ws == ws && s.cmd == cmd && s.running {
				got = s.pod
				return nil
			}
		}
		return fmt.Errorf("none")
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// nodesAfter are the nodes of workspace ws's runner pods first seen after
// since.
func (r *runnerPodLog) nodesAfter(ws string, since time.Time) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var nodes []string
	for _, s := range r.pods {
		if s.ws == ws && s.first.After(since) && !slices.Contains(nodes, s.node) {
			nodes = append(nodes, s.node)
		}
	}
	slices.Sort(nodes)
	return nodes
}

// oomKilled is the number of runner pods whose container was OOMKilled.
func (r *runnerPodLog) oomKilled() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.pods {
		if s.oom {
			n++
		}
	}
	return n
}

// owner is the owner label of the runner pods seen (the CCM's identity).
func (r *runnerPodLog) owner() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.pods {
		if s.owner != "" {
			return s.owner
		}
	}
	return ""
}

// leftoverJob creates a runner Job as a CCM that died while it wrote the
// Job's inputs leaves it: suspended, never started, of this CCM (its
// owner label).
func leftoverJob(t *testing.T, client kubernetes.Interface, runs *runnerPodLog) *batchv1.Job {
	t.Helper()
	owner := runs.owner()
	if owner == "" {
		t.Fatal("no runner pod seen yet: no owner label to copy")
	}
	yes := true
	labels := map[string]string{jobrunner.LabelRunner: "job", jobrunner.LabelOwner: owner, jobrunner.LabelWorkspace: "leftover"}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "tfccm-run-" + owner + "-leftover", Namespace: runnersNamespace, Labels: labels},
		Spec: batchv1.JobSpec{
			Suspend: &yes,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "tofu", Image: AgnhostImage, Args: []string{"pause"}}},
			}},
		},
	}
	job, err := client.BatchV1().Jobs(runnersNamespace).Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// serviceWorkspace is Service name's load balancer workspace.
func serviceWorkspace(t *testing.T, client kubernetes.Interface, name string) string {
	t.Helper()
	svc, err := client.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return templates.LoadBalancerWorkspaceName(&config.Config{ClusterName: "incluster"}, svc)
}

// waitLock waits until workspace ws's state lock is held.
func waitLock(t *testing.T, client kubernetes.Interface, ws string) {
	t.Helper()
	err := harness.Eventually(context.Background(), 2*time.Minute, "the state lock of "+ws+" is held", func(ctx context.Context) error {
		if !lockHeld(ctx, client, ws) {
			return fmt.Errorf("not held")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// cordon marks node unschedulable (on) or schedulable again.
func cordon(client kubernetes.Interface, node string, on bool) error {
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
	_, err := client.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// kubectl runs the repository's kubectl against the cluster.
func kubectl(c *Cluster, args ...string) (string, error) {
	root, err := repo.Root()
	if err != nil {
		return "", err
	}
	out, err := exec.Command(filepath.Join(root, "bin", "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig()}, args...)...).CombinedOutput()
	return string(out), err
}

// webPods waits until the two pods labelled app=web run and returns
// their names.
func webPods(t *testing.T, client kubernetes.Interface) []string {
	t.Helper()
	var names []string
	err := harness.Eventually(context.Background(), 3*time.Minute, "two pods app=web run", func(ctx context.Context) error {
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return err
		}
		names = nil
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
				names = append(names, p.Name)
			}
		}
		if len(names) != 2 {
			return fmt.Errorf("running: %v", names)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// waitNewCCMPod waits until the chart's one pod is another than old and
// runs.
func waitNewCCMPod(t *testing.T, client kubernetes.Interface, old string) *corev1.Pod {
	t.Helper()
	err := harness.Eventually(context.Background(), 3*time.Minute, "a new CCM pod replaces "+old, func(ctx context.Context) error {
		pods, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: ccmSelector})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Name == old {
				return fmt.Errorf("%s is still there", old)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return waitCCMPod(t, client)
}

// waitNoHeldLocks waits until no workspace's state lock is held: a run
// still finishing may hold one for a while, a lock nobody releases fails.
func waitNoHeldLocks(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	err := harness.Eventually(context.Background(), 3*time.Minute, "no state lock is held", func(ctx context.Context) error {
		leases, err := client.CoordinationV1().Leases(stateNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, l := range leases.Items {
			if strings.HasPrefix(l.Name, "lock-tfstate") && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
				return fmt.Errorf("state lock %s is held by %s", l.Name, *l.Spec.HolderIdentity)
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// logLinesWith are the lines of log that contain s (each cut at 2,000
// bytes).
func logLinesWith(log, s string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l[:min(len(l), 2000)])
		}
	}
	return out
}
