package nodes

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"golang.org/x/sync/errgroup"

	"github.com/tfccm/tfccm/deploy"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/test/harness"
)

// benchNodes is the number of nodes the runner bench runs on.
const benchNodes = 3

// benchHealthInterval is load_balancer.health_interval in the runner bench.
const benchHealthInterval = "15m"

// TestRunnersVsInProcess (make bench-runners; TFCCM_BENCH_RUNNERS=N
// Services, 200 in make bench) installs tfccm from its chart on three
// real nodes (the baremetal set over SSH, state in Secrets) and creates N
// LoadBalancer Services at once, first with tofu in the CCM's pod, then
// (helm upgrade, same cluster) with runner Jobs, at the same
// terraform.parallelism (TFCCM_BENCH_PARALLELISM, default 6) and enough
// service workers for it. It prints the time ratio (runners/in-process),
// the runner's per-run costs (pods per apply, wall time per Job, pod
// start latency), kube-apiserver's writes per apply by resource (from its
// apiserver_request_total, less the cluster's idle rate) and the bytes a
// workspace keeps in etcd (state Secret, lock Lease) and moves per run
// (input and result Secrets). It fails when a Service got no ingress, two
// share a VIP, or a runner Job or Secret is left behind.
func TestRunnersVsInProcess(t *testing.T) {
	n := harness.BenchCount(t, "TFCCM_BENCH_RUNNERS", "TFCCM_BENCH_RUNNERS=N runs the runner bench on real nodes (make bench-runners)")
	needNodes(t)
	if n > 250 {
		// One VRRP id per Service (1-255) and a VIP from the cloud's /24.
		t.Fatalf("TFCCM_BENCH_RUNNERS=%d: the baremetal set on one VRRP network holds at most 250 load balancers here", n)
	}
	par := 6
	if v := os.Getenv("TFCCM_BENCH_PARALLELISM"); v != "" {
		var err error
		if par, err = strconv.Atoi(v); err != nil || par < 1 {
			t.Fatalf("TFCCM_BENCH_PARALLELISM=%q: want a positive number", v)
		}
	}
	ctx := context.Background()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	ic := newInCluster(t, imageArchive(t), benchNodes)
	client := ic.client
	lb := ic.hosts.LBSettings()
	// The whole /24, not the hosts' /25 (too small for 200 VIPs), with
	// tfccm's address pool keeping VIPs off its first addresses: the
	// cloud's router (.1, which no LB host sees) and the hosts (.2, .3;
	// lbhost reserves those itself too).
	lb["vip_pool"] = ic.c.Cloud.VIPPool
	vipPool := netip.MustParsePrefix(ic.c.Cloud.VIPPool)
	first, last := vipPool.Addr().Next().Next().Next().Next(), host.LastAddr(vipPool).Prev()
	lb["virtual_router_ids"] = "1-255"
	base, err := inClusterValuesLB(ic.c, ic.hosts, lb, ic.ref,
		"mode: deployment\nreplicas: 1\nhostNetwork: true\nnodeSelector:\n  kubernetes.io/hostname: node-a\nuninstall:\n  loadBalancers: none\n")
	if err != nil {
		t.Fatal(err)
	}
	// Health reads every benchHealthInterval, as docs/scale.md advises for
	// runner Jobs: the burst measures applies, not a health round that
	// would re-read every applied load balancer each 30 s.
	if !strings.Contains(base, "    load_balancer {\n") {
		t.Fatal("the chart values have no load_balancer block to set health_interval in")
	}
	base = strings.Replace(base, "    load_balancer {\n", fmt.Sprintf("    load_balancer {\n      health_interval = %q\n      address_pool \"bench\" {\n        addresses = [\"%s-%s\"]\n      }\n", benchHealthInterval, first, last), 1)
	dir := t.TempDir()
	baseFile := filepath.Join(dir, "base.yaml")
	if err := os.WriteFile(baseFile, []byte(base), 0o600); err != nil {
		t.Fatal(err)
	}
	ccmLog := func() string { return ccmPodLogs(client, 60) + "\nrunner pods:\n" + runnerPods(client) }

	// In-process.
	ic.install(t, "", benchValues(par, false), baseFile)
	ccm := waitCCMPod(t, client)
	if err := harness.WaitNodesInitialized(ctx, client, 3*time.Minute); err != nil {
		t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
	}
	waitNodesReady(t, client)
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != benchNodes {
		t.Fatalf("nodes: %v, want %d", err, benchNodes)
	}
	waitPodRoutes(t, ic.c, nodes.Items)
	if t.Failed() {
		t.FailNow()
	}
	proc := runBench(t, client, "proc", n, nil, ccmLog)
	deleteServices(t, client, proc.names, ccmLog)
	ccm = waitCCMPod(t, client)

	if benchModes()["pool"] {
		// The runner pool: the same cluster, the chart upgraded.
		ccm = benchPool(t, ic, client, baseFile, dir, par, n, proc, ccm.Name, ccmLog)
	}
	if !benchModes()["job"] {
		return
	}

	// Runner Jobs: the same cluster, the chart upgraded.
	over := filepath.Join(dir, "runners.yaml")
	if err := os.WriteFile(over, []byte(benchValues(par, true)), 0o600); err != nil {
		t.Fatal(err)
	}
	obsCtx, stop := context.WithCancel(ctx)
	defer stop()
	obs := watchRunnerCosts(obsCtx, client)
	if out, err := ic.rel.Helm("upgrade", "tfccm", filepath.Join(root, deploy.Chart), "--values", baseFile, "--values", over); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	ic.runnerSecret(t)
	waitReplaced(t, client, ccm.Name)
	obs.waitSettled(t)
	job := runBench(t, client, "job", n, obs, ccmLog)
	jobs := obs.allJobs()

	ratio := job.wall.Seconds() / proc.wall.Seconds()
	t.Logf("RUNNERS: %d Services on %d nodes, parallelism %d: in-process %s, runner Jobs %s, ratio %.2f",
		n, benchNodes, par, proc.wall.Round(time.Second), job.wall.Round(time.Second), ratio)
	for _, r := range []*benchRun{proc, job} {
		t.Logf("RUNNERS: %s", r.summary())
	}
	t.Logf("RUNNERS: %s", obs.summary(n))
	// What a runner Job adds: the burst's writes less the in-process
	// burst's (the engine's own: Services, state, locks, Events), over
	// every runner Job of the burst (also any of other workspaces).
	t.Logf("RUNNERS: %d runner Jobs in the burst (%.2f per apply, any workspace); apiserver writes per runner Job %.1f",
		jobs, float64(jobs)/float64(n), (job.writes.total()-proc.writes.total())/float64(jobs))
	for _, r := range []*benchRun{proc, job} {
		t.Logf("RUNNERS: %s writes per apply by resource: %s", r.mode, r.writes.byResource(n))
	}
}

// benchValues are the chart values over the base: terraform.parallelism
// par, service workers for it, runner Jobs or not.
func benchValues(par int, runner bool) string {
	return benchPoolValues(par, runner, 0)
}

// benchPoolValues are benchValues with runner.pool = pool.
func benchPoolValues(par int, runner bool, pool int) string {
	flags := slices.DeleteFunc(slices.Clone(CCMFlags), func(f string) bool { return strings.HasPrefix(f, "--concurrent-service-syncs=") })
	flags = append(flags, fmt.Sprintf("--concurrent-service-syncs=%d", max(10, par)))
	return fmt.Sprintf("extraArgs: [%s]\ncloudConfig:\n  terraform: |\n    parallelism = %d\nrunner:\n  enabled: %v\n  hostNetwork: true\n  pool: %d\n",
		strings.Join(flags, ", "), par, runner, pool)
}

// benchModes are the runner modes the bench measures after the
// in-process burst (TFCCM_BENCH_MODES, comma-separated: job, pool;
// default job).
func benchModes() map[string]bool {
	v := os.Getenv("TFCCM_BENCH_MODES")
	if v == "" {
		v = "job"
	}
	out := map[string]bool{}
	for _, m := range strings.Split(v, ",") {
		out[strings.TrimSpace(m)] = true
	}
	return out
}

// waitReplaced waits until the chart's one pod is a new one (not old) and
// ready.
func waitReplaced(t *testing.T, client kubernetes.Interface, old string) {
	t.Helper()
	err := harness.Eventually(context.Background(), 3*time.Minute, "the CCM pod replaced", func(ctx context.Context) error {
		pods, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: ccmSelector})
		if err != nil {
			return err
		}
		if len(pods.Items) != 1 || pods.Items[0].Name == old {
			return fmt.Errorf("%d CCM pods", len(pods.Items))
		}
		p := pods.Items[0]
		if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) == 0 || !p.Status.ContainerStatuses[0].Ready {
			return fmt.Errorf("pod %s: %s", p.Name, p.Status.Phase)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// benchRun is one burst: mode ("proc", "job"), its Services, the time to
// every ingress, the apiserver's writes and the etcd bytes per workspace.
type benchRun struct {
	mode   string
	names  []string
	wall   time.Duration
	writes writeCounts // net of the idle rate
	state  objectSizes // state Secrets of its workspaces
	locks  objectSizes // their lock Leases
}

// benchIdle is how long the cluster's idle write rate is measured before
// a burst (kubelets, leader elections, node status).
const benchIdle = 45 * time.Second

// runBench measures a burst of n Services named bench-<mode>-NNN. With
// obs (runner Jobs) it also waits until every runner Job, pod and Secret
// is gone before it reads the apiserver's counters.
func runBench(t *testing.T, client kubernetes.Interface, mode string, n int, obs *runnerCosts, ccmLog func() string) *benchRun {
	t.Helper()
	ctx := context.Background()
	r := &benchRun{mode: mode}
	for i := range n {
		r.names = append(r.names, fmt.Sprintf("bench-%s-%03d", mode, i))
	}
	idle0 := apiserverWrites(t, client)
	time.Sleep(benchIdle)
	idle := apiserverWrites(t, client).minus(idle0)
	before := apiserverWrites(t, client)
	start := time.Now()
	if obs != nil {
		obs.reset()
	}
	var g errgroup.Group
	g.SetLimit(20)
	for _, name := range r.names {
		g.Go(func() error {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
					Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
			_, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	timeout := max(20*time.Minute, time.Duration(n)*20*time.Second)
	vips := map[string]string{}
	err := harness.Eventually(ctx, timeout, fmt.Sprintf("%d Services (%s) get ingress", n, mode), func(ctx context.Context) error {
		list, err := client.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		clear(vips)
		for _, s := range list.Items {
			if strings.HasPrefix(s.Name, "bench-"+mode+"-") && len(s.Status.LoadBalancer.Ingress) > 0 {
				vips[s.Name] = s.Status.LoadBalancer.Ingress[0].IP
			}
		}
		if len(vips) < n {
			return fmt.Errorf("%d of %d", len(vips), n)
		}
		return nil
	})
	r.wall = time.Since(start)
	if err != nil {
		t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
	}
	owner := map[string]string{}
	for name, vip := range vips {
		if other, dup := owner[vip]; dup {
			t.Errorf("Services %s and %s share VIP %s", other, name, vip)
		}
		owner[vip] = name
	}
	if obs != nil {
		noRunnersLeft(t, client)
	}
	r.writes = apiserverWrites(t, client).minus(before).lessIdle(idle, benchIdle, time.Since(start))
	// The load balancers' workspaces ("lb-..."): the burst's own, as the
	// previous burst's were destroyed with their Services.
	r.state, r.locks = stateSizes(t, client)
	return r
}

func (r *benchRun) summary() string {
	n := len(r.names)
	return fmt.Sprintf("%s: %d Services in %s (%.2f applies/s); apiserver writes per apply %.1f (POST %.1f, PUT %.1f, PATCH %.1f, DELETE %.1f); etcd per workspace: state Secret %s, lock Lease %s",
		r.mode, n, r.wall.Round(time.Second), float64(n)/r.wall.Seconds(), r.writes.total()/float64(n),
		r.writes.verb("POST")/float64(n), r.writes.verb("PUT")/float64(n), r.writes.verb("PATCH")/float64(n), r.writes.verb("DELETE")/float64(n),
		r.state, r.locks)
}

// deleteServices deletes the Services names and waits until they are
// gone (their load balancers destroyed).
func deleteServices(t *testing.T, client kubernetes.Interface, names []string, ccmLog func() string) {
	t.Helper()
	ctx := context.Background()
	var g errgroup.Group
	g.SetLimit(20)
	for _, name := range names {
		g.Go(func() error { return client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if err := harness.WaitServiceDeleted(ctx, client, "default", name, 15*time.Minute); err != nil {
			t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
		}
	}
}

// noRunnersLeft waits until no runner Job, pod or Secret is left (the
// stand-in deletes each Job, the garbage collector its pod and Secrets).
func noRunnersLeft(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: "tfccm.io/runner=job"}
	err := harness.Eventually(context.Background(), 5*time.Minute, "no runner Job, pod or Secret left", func(ctx context.Context) error {
		jobs, err := client.BatchV1().Jobs(runnersNamespace).List(ctx, sel)
		if err != nil {
			return err
		}
		pods, err := client.CoreV1().Pods(runnersNamespace).List(ctx, sel)
		if err != nil {
			return err
		}
		secrets, err := client.CoreV1().Secrets(runnersNamespace).List(ctx, sel)
		if err != nil {
			return err
		}
		if n := len(jobs.Items) + len(pods.Items) + len(secrets.Items); n > 0 {
			return fmt.Errorf("%d Jobs, %d pods, %d Secrets", len(jobs.Items), len(pods.Items), len(secrets.Items))
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
