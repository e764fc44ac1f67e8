package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"golang.org/x/sync/errgroup"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// burstParallelism is the engine's parallelism in the burst benchmark and
// the number of raw tofu pipelines it is compared with.
const burstParallelism = 4

// TestBurstVsRawTofu (make bench; TFCCM_BENCH_BURST=N Services, e.g. 200;
// 1,000 and 5,000 get a VIP pool that holds them)
// creates N LoadBalancer Services at once and times them to all having
// ingress through the CCM with the binary's own defaults (10 service
// workers, as the chart; the engine at parallelism 4), then times raw `tofu init`, `plan -out` and `apply` of the
// same N rendered workspaces with 4 pipelines, in the same run. It fails when
// an apply failed (VIP allocation must be race-free), two Services share a
// VIP, or the ratio exceeds TFCCM_BENCH_BURST_MAX (default 1.2).
func TestBurstVsRawTofu(t *testing.T) {
	n := harness.BenchCount(t, "TFCCM_BENCH_BURST", "TFCCM_BENCH_BURST=N runs the burst benchmark (make bench)")
	maxRatio := harness.BenchRatio(t, "TFCCM_BENCH_BURST_MAX", 1.2)
	// A VIP pool and a service range that hold N (1,000: a /22 VIP pool).
	cloud := localcloud.ForTest(t, localcloud.Options{VIPs: n})
	cluster := devcluster.ForTestWith(t, devcluster.Options{ServiceCIDRs: "10.0.0.0/16", NodePortRange: "20000-32767"}) // 5,000 Services fit
	client := cluster.Client()
	serveNodes(t, cloud, 30080)
	for _, name := range cloud.Nodes() {
		createNode(t, client, cloud, name)
	}
	lb := harness.Block("load_balancer", cloud.LBSettings())
	ensureWait := os.Getenv("TFCCM_BENCH_ENSURE_WAIT") // load_balancer.ensure_wait; default: the CCM's
	if ensureWait != "" {
		lb = strings.Replace(lb, "load_balancer {", fmt.Sprintf("load_balancer {\n  ensure_wait = %q", ensureWait), 1)
	}
	cfg, workDir := writeCloudConfig(t, t.TempDir(), lb, fmt.Sprintf("parallelism = %d", burstParallelism))
	ccm := startCCM(t, cluster, cfg, strings.Fields(os.Getenv("TFCCM_BENCH_FLAGS"))...) // the binary's defaults (README command line)

	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("burst-%04d", i)
	}
	reloads0 := haproxyReloads(t, cloud)
	ccmCPU0, planeCPU0 := burstCPU(t, ccm.PID()), controlPlaneCPU(t, cluster)
	start := time.Now()
	var mu sync.Mutex
	serviceOf := map[string]string{} // workspace -> Service, for a leak's log lines
	forEach(t, names, 20, func(ctx context.Context, name string) error {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
		created, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		serviceOf[templates.LoadBalancerWorkspaceName(&config.Config{ClusterName: "e2e"}, created)] = name
		return nil
	})
	vips := waitAllIngress(t, client, names, scaleTimeout(n))
	ccmTime := time.Since(start)
	ccmReloads := haproxyReloads(t, cloud) - reloads0
	ccmCPU, planeCPU := burstCPU(t, ccm.PID()).Sub(ccmCPU0), controlPlaneCPU(t, cluster)-planeCPU0
	seen := map[string]string{}
	for name, vip := range vips {
		if other, dup := seen[vip]; dup {
			t.Errorf("Services %s and %s share VIP %s", other, name, vip)
		}
		seen[vip] = name
	}
	applies, failed, engineOps := engineApplies(t, cluster, ccm)
	warnings := syncWarnings(t, client)
	t.Logf("CCM: %d Services to ingress in %s; %d applies, %d failed; tofu per workspace %s (%s), slots busy %.0f%%", n, ccmTime.Round(10*time.Millisecond), applies, failed,
		(sumOps(engineOps) / time.Duration(n)).Round(time.Millisecond), perWorkspace(engineOps, n), 100*sumOps(engineOps).Seconds()/(burstParallelism*ccmTime.Seconds()))
	if failed > 0 {
		t.Errorf("%d applies failed under the burst", failed)
	}

	// The same workspaces, as tfccm rendered them, for raw tofu: the
	// template, the generated inputs and backend, nothing of the engine's.
	rawDir := t.TempDir()
	dirs, err := filepath.Glob(filepath.Join(workDir, "lb-*"))
	if err != nil || len(dirs) != n {
		t.Fatalf("workspaces under %s: %d, want %d (%v)", workDir, len(dirs), n, err)
	}
	var raw []string
	for _, d := range dirs {
		dst := filepath.Join(rawDir, filepath.Base(d))
		if err := copyRendered(d, dst); err != nil {
			t.Fatal(err)
		}
		raw = append(raw, dst)
	}
	forEach(t, names, 20, func(ctx context.Context, name string) error {
		return client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{})
	})
	for _, name := range names {
		waitServiceDeleted(t, client, name, 10*time.Minute)
	}
	ccm.Stop()
	// Every Service's load balancer is gone from the cloud, not only the
	// Services (their finalizers removed): the raw run below re-creates
	// them at the same addresses.
	if left := cloud.LBObjects(); len(left) > 0 {
		t.Fatalf("load balancer objects left in the cloud after every Service was deleted: %v\n%s", left, leakedLog(ccm.Log(), cloud.StateDir, left, serviceOf))
	}

	// RunTofu gives tofu the same lbhost mirror the CCM's config names.
	tofu := repo.Tofu(t)
	reloads0 = haproxyReloads(t, cloud)
	rawCPU0 := childrenCPU(t)
	start = time.Now()
	var rawInit, rawPlan, rawApply atomic.Int64
	forEach(t, raw, burstParallelism, func(ctx context.Context, dir string) error {
		for _, c := range []struct {
			args []string
			busy *atomic.Int64
		}{
			{[]string{"init", "-input=false", "-no-color"}, &rawInit},
			{[]string{"plan", "-input=false", "-no-color", "-out=tfplan"}, &rawPlan},
			{[]string{"apply", "-input=false", "-no-color", "tfplan"}, &rawApply},
		} {
			began := time.Now()
			_, err := localcloud.RunTofu(ctx, tofu, dir, c.args...)
			c.busy.Add(int64(time.Since(began)))
			if err != nil {
				return err
			}
		}
		return nil
	})
	rawOps := map[string]time.Duration{"init": time.Duration(rawInit.Load()), "plan": time.Duration(rawPlan.Load()), "apply": time.Duration(rawApply.Load())}
	rawTime := time.Since(start)
	rawReloads := haproxyReloads(t, cloud) - reloads0
	rawCPU := childrenCPU(t) - rawCPU0
	forEach(t, raw, burstParallelism, func(ctx context.Context, dir string) error {
		_, err := localcloud.RunTofu(ctx, tofu, dir, "destroy", "-auto-approve", "-input=false", "-no-color")
		return err
	})
	ratio := ccmTime.Seconds() / rawTime.Seconds()
	t.Logf("BURST services=%d ensure_wait=%q ccm=%s raw_tofu=%s ratio=%.2f (goal <= %.2f) applies_per_service=%.2f apply_failures=%d sync_warnings=%d",
		n, ensureWait, ccmTime.Round(10*time.Millisecond), rawTime.Round(10*time.Millisecond), ratio, maxRatio, float64(applies)/float64(n), failed, warnings)
	// Where the difference is: tofu time per workspace (slower tofu runs:
	// the apiserver, etcd and the CCM share the CPUs), by command, and how
	// busy the engine's slots were over the burst (idle slots: the
	// pipeline in front of the engine).
	engineBusy, rawBusy := sumOps(engineOps), sumOps(rawOps)
	t.Logf("BURST haproxy_reloads ccm=%d raw=%d (the LB host commits concurrent applies together)", ccmReloads, rawReloads)
	t.Logf("BURST tofu_per_workspace ccm=%s (%s) raw=%s (%s); slots busy ccm=%.0f%% raw=%.0f%%",
		(engineBusy / time.Duration(n)).Round(time.Millisecond), perWorkspace(engineOps, n),
		(rawBusy / time.Duration(n)).Round(time.Millisecond), perWorkspace(rawOps, n),
		100*engineBusy.Seconds()/(burstParallelism*ccmTime.Seconds()), 100*rawBusy.Seconds()/(burstParallelism*rawTime.Seconds()))
	// CPU per Service (the machine's CPUs are what the two sides share):
	// tofu and its providers on each side; the CCM itself and the control
	// plane on tfccm's. HAProxy's reloads are the LB host's, left out.
	perSvc := func(d time.Duration) time.Duration { return (d / time.Duration(n)).Round(time.Millisecond) }
	t.Logf("BURST cpu_per_service ccm: tofu=%s ccm=%s control_plane=%s total=%s; raw: tofu=%s",
		perSvc(ccmCPU.Children), perSvc(ccmCPU.Own), perSvc(planeCPU), perSvc(ccmCPU.Children+ccmCPU.Own+planeCPU), perSvc(rawCPU))
	if ratio > maxRatio {
		t.Errorf("burst of %d Services took %.2fx raw tofu (goal <= %.2f)", n, ratio, maxRatio)
	}
}

// burstCPU is the CCM's CPU time so far, its own and its tofu commands'.
func burstCPU(t *testing.T, pid int) harness.CPU {
	t.Helper()
	c, err := harness.ProcessCPU(pid)
	if err != nil {
		t.Fatalf("CCM's CPU time: %v", err)
	}
	return c
}

// controlPlaneCPU is the CPU time etcd and kube-apiserver used so far.
func controlPlaneCPU(t *testing.T, cluster *devcluster.Cluster) time.Duration {
	t.Helper()
	var sum time.Duration
	for _, pid := range cluster.ControlPlanePIDs() {
		c, err := harness.ProcessCPU(pid)
		if err != nil {
			t.Fatalf("control plane's CPU time: %v", err)
		}
		sum += c.Own
	}
	return sum
}

// childrenCPU is the CPU time of this test's children it waited for (raw
// tofu commands, with the providers each started and waited for).
func childrenCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// forEach runs f for every item with at most par at once and fails the test
// with the first error.
func forEach(t *testing.T, items []string, par int, f func(ctx context.Context, item string) error) {
	t.Helper()
	g, ctx := errgroup.WithContext(t.Context())
	g.SetLimit(par)
	for _, item := range items {
		g.Go(func() error {
			if err := f(ctx, item); err != nil {
				return fmt.Errorf("%s: %w", item, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// waitAllIngress waits until every named Service has an ingress IP and
// returns them.
func waitAllIngress(t *testing.T, client kubernetes.Interface, names []string, timeout time.Duration) map[string]string {
	t.Helper()
	vips := map[string]string{}
	eventually(t, timeout, fmt.Sprintf("ingress on %d Services", len(names)), func(ctx context.Context) error {
		list, err := client.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, s := range list.Items {
			if ing := s.Status.LoadBalancer.Ingress; len(ing) > 0 && ing[0].IP != "" {
				vips[s.Name] = ing[0].IP
			}
		}
		missing := 0
		for _, name := range names {
			if vips[name] == "" {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d Services without ingress", missing, len(names))
		}
		return nil
	})
	return vips
}

// syncWarnings counts the service controller's SyncLoadBalancerFailed
// Warnings (each RetryError is one) in the default namespace.
func syncWarnings(t *testing.T, client kubernetes.Interface) int {
	t.Helper()
	list, err := client.CoreV1().Events("default").List(t.Context(), metav1.ListOptions{FieldSelector: "reason=SyncLoadBalancerFailed"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		n += max(1, int(e.Count))
	}
	return n
}

var durationMetric = regexp.MustCompile(`(?m)^tfccm_workspace_operation_duration_seconds_sum\{operation="(\w+)"\} ([0-9.e+-]+)$`)

var applyMetric = regexp.MustCompile(`(?m)^tfccm_workspace_operations_total\{operation="apply",result="(\w+)"\} (\d+)$`)

// engineApplies reads the CCM's applies (successful and failed) from its
// /metrics, and the summed wall time of its tofu commands by operation.
func engineApplies(t *testing.T, cluster *devcluster.Cluster, ccm *harness.CCM) (ok, failed int, ops map[string]time.Duration) {
	t.Helper()
	body := ccmMetrics(t, cluster, ccm)
	for _, m := range applyMetric.FindAllStringSubmatch(body, -1) {
		v, _ := strconv.Atoi(m[2])
		switch m[1] {
		case "success":
			ok += v
		case "error":
			failed += v
		}
	}
	ops = map[string]time.Duration{}
	for _, m := range durationMetric.FindAllStringSubmatch(body, -1) {
		f, _ := strconv.ParseFloat(m[2], 64)
		ops[m[1]] += time.Duration(f * float64(time.Second))
	}
	return ok, failed, ops
}

func sumOps(ops map[string]time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ops {
		sum += d
	}
	return sum
}

// perWorkspace is "init=120ms plan=900ms ...": each operation's time per
// workspace, operations in name order.
func perWorkspace(ops map[string]time.Duration, n int) string {
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(ops)) {
		parts = append(parts, fmt.Sprintf("%s=%s", op, (ops[op]/time.Duration(n)).Round(time.Millisecond)))
	}
	return strings.Join(parts, " ")
}

// copyRendered copies what tfccm rendered into a workspace (not OpenTofu's
// .terraform, state or the engine's own records) to dst.
func copyRendered(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "terraform.tfstate") || strings.HasSuffix(name, ".tfplan") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// leakedLog is the CCM's log lines that name each leaked load balancer
// object's workspace or Service (serviceOf: workspace -> Service). The
// object is "fragments/<cluster>_<lb name>.cfg", or "claims/<address>"
// holding "<cluster>_<lb name>" (".6" appended for IPv6), in the cloud's
// stateDir; its workspace is "lb-<lb name>".
func leakedLog(log, stateDir string, objects []string, serviceOf map[string]string) string {
	var b strings.Builder
	for _, o := range objects {
		owner := strings.TrimSuffix(path.Base(o), ".cfg")
		if strings.HasPrefix(o, "claims/") {
			data, _ := os.ReadFile(filepath.Join(stateDir, o))
			if f := strings.Fields(string(data)); len(f) > 0 {
				owner = f[0]
			}
		}
		_, lb, _ := strings.Cut(strings.TrimSuffix(owner, ".6"), "_")
		ws := "lb-" + lb
		svc := serviceOf[ws]
		fmt.Fprintf(&b, "CCM log lines naming %s or Service default/%s (%s):\n", ws, svc, o)
		names := regexp.MustCompile(regexp.QuoteMeta(ws) + `\b|default/` + regexp.QuoteMeta(svc) + `\b`)
		for line := range strings.Lines(log) {
			if svc != "" && names.MatchString(line) || strings.Contains(line, ws) {
				b.WriteString(line)
			}
		}
	}
	return b.String()
}

// haproxyReloads is the local cloud's HAProxy reload count.
func haproxyReloads(t *testing.T, cloud *localcloud.Cloud) int {
	t.Helper()
	n, err := cloud.HAProxyReloads()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
