package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
)

// TestCCMScaleBench (make bench; TFCCM_BENCH_CCM=N load balancers, 1,000
// there, 5,000 where the machine allows) measures the CCM itself with N
// LoadBalancer Services against a real kube-apiserver, on the cheap
// template of testdata/scale (one terraform_data per load balancer,
// layered over the local set; addresses from an address pool of tfccm's):
//
//   - the CCM's resident memory (and Go heap in use) with 1 and 1+K Nodes
//     (K = TFCCM_BENCH_CCM_NODES, 1,000; 100 of them stay for the
//     Services), then with N/2 and N Services: memory per Node and per
//     Service are the slopes; at N <= 1,000 it fails above
//     TFCCM_BENCH_CCM_RSS_MAX MiB (200);
//   - tofu processes alive while nothing changes (every process under the
//     work dir, sampled every second): it fails on any;
//   - a restart of the CCM with every workspace unchanged (and drift
//     checks turned on, off until then): it fails when a tofu process
//     starts before every workspace was found applied, or 30s after;
//   - the first drift round after the restart (terraform.drift_interval =
//     TFCCM_BENCH_CCM_DRIFT, default max(4m, N x 0.6s)): the start of each
//     drift plan; it fails when a load balancer is re-planned twice in one
//     interval or a second holds more than 1% of them.
//
// Every tofu start is counted by a wrapper that logs it and execs tofu.
func TestCCMScaleBench(t *testing.T) {
	n := harness.BenchCount(t, "TFCCM_BENCH_CCM", "TFCCM_BENCH_CCM=N runs the CCM scale benchmark (make bench)")
	extraNodes := scaleEnvInt(t, "TFCCM_BENCH_CCM_NODES", 1000)
	rssMax := scaleEnvInt(t, "TFCCM_BENCH_CCM_RSS_MAX", 200)
	drift := max(4*time.Minute, time.Duration(n)*600*time.Millisecond)
	if v := os.Getenv("TFCCM_BENCH_CCM_DRIFT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("TFCCM_BENCH_CCM_DRIFT=%q: want a positive duration", v)
		}
		drift = d
	}
	// ClusterIPs and node ports for 5,000 Services.
	cluster := devcluster.ForTestWith(t, devcluster.Options{ServiceCIDRs: "10.0.0.0/16", NodePortRange: "20000-32767"})
	client := cluster.Client()
	dir := t.TempDir()
	starts := filepath.Join(dir, "tofu-starts.log")
	wrapper := writeTofuWrapper(t, dir, repo.Tofu(t), starts)
	override := filepath.Join(repoRoot(t), "test", "e2e", "testdata", "scale")
	// A /18 holds 16,382 addresses: room for 5,000 and more.
	blocks := fmt.Sprintf("override_dir = %q\nload_balancer {\n  health_interval = \"0s\"\n  address_pool \"bench\" {\n    addresses = [\"10.200.0.0/18\"]\n  }\n}\n", override)
	// Drift checks are off until the restart: a round while Services are
	// created or the CCM idles would blur both measurements. The restart
	// turns them on (an engine setting: no workspace's content changes).
	config := func(drift time.Duration) (cfg, workDir string) {
		cfg, workDir = writeCloudConfig(t, dir, blocks, fmt.Sprintf("parallelism = %d", burstParallelism), fmt.Sprintf("drift_interval = %q", drift.String()))
		return scaleUseWrapper(t, cfg, repo.Tofu(t), wrapper), workDir
	}
	cfg, workDir := config(0)
	registerNode(t, client, harness.Node{Name: "node-0", InternalIPs: []string{"10.199.0.1"}})
	ccm := startCCM(t, cluster, cfg)
	uptime := func() string {
		b, _ := os.ReadFile("/proc/loadavg")
		return strings.Join(strings.Fields(string(b))[:3], " ")
	}
	t.Logf("CCM_SCALE: N=%d, +%d nodes, drift_interval=%s, parallelism=%d; load average %s", n, extraNodes, drift, burstParallelism, uptime())

	// Memory per Node: 1 Node, then 1+K, before any Service; the Services
	// then serve 1+min(K, 100) Nodes.
	time.Sleep(15 * time.Second)
	rss0, heap0 := rssOf(t, ccm), scaleHeap(t, cluster, ccm)
	for i := 1; i <= extraNodes; i++ {
		registerNode(t, client, harness.Node{Name: fmt.Sprintf("node-%d", i), InternalIPs: []string{fmt.Sprintf("10.199.%d.%d", i/250, 1+i%250)}})
	}
	time.Sleep(15 * time.Second)
	rss1, heap1 := rssOf(t, ccm), scaleHeap(t, cluster, ccm)
	perNode := float64(rss1-rss0) / float64(max(extraNodes, 1))
	t.Logf("CCM_SCALE: RSS %d MiB with 1 node, %d MiB with %d: %.1f KiB per Node (Go heap in use %d -> %d MiB: %.1f KiB per Node)",
		rss0>>10, rss1>>10, extraNodes+1, perNode, heap0>>20, heap1>>20, float64(heap1-heap0)/1024/float64(max(extraNodes, 1)))
	for i := 101; i <= extraNodes; i++ {
		if err := client.CoreV1().Nodes().Delete(t.Context(), fmt.Sprintf("node-%d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Memory per Service: N/2 Services, then N.
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%04d", i)
	}
	create := func(from, to int) time.Duration {
		start := time.Now()
		forEach(t, names[from:to], 20, func(ctx context.Context, name string) error {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
					Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
			_, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
			return err
		})
		waitAllIngress(t, client, names[:to], scaleTimeout(n))
		return time.Since(start)
	}
	half := n / 2
	took := create(0, half)
	waitTofuQuiet(t, starts, 10*time.Second)
	time.Sleep(5 * time.Second)
	rssHalf, heapHalf := rssOf(t, ccm), scaleHeap(t, cluster, ccm)
	t.Logf("CCM_SCALE: %d Services to ingress in %s; RSS %d MiB, Go heap in use %d MiB; load average %s", half, took.Round(time.Second), rssHalf>>10, heapHalf>>20, uptime())
	took = create(half, n)
	waitTofuQuiet(t, starts, 10*time.Second)
	time.Sleep(5 * time.Second)
	rssFull, heapFull := rssOf(t, ccm), scaleHeap(t, cluster, ccm)
	perService := float64(rssFull-rssHalf) / float64(n-half)
	t.Logf("CCM_SCALE: %d more Services to ingress in %s; RSS %d MiB at N=%d: %.1f KiB per Service (Go heap in use %d MiB: %.1f KiB per Service); load average %s",
		n-half, took.Round(time.Second), rssFull>>10, n, perService, heapFull>>20, float64(heapFull-heapHalf)/1024/float64(n-half), uptime())

	// Idle: nothing changes; no tofu process may be alive.
	idle := 30
	maxAlive, alive := 0, []harness.Process(nil)
	for range idle {
		if p := harness.ProcessesUnder(workDir); len(p) > maxAlive {
			maxAlive, alive = len(p), p
		}
		time.Sleep(time.Second)
	}
	rssIdle := rssOf(t, ccm)
	t.Logf("CCM_SCALE: idle %ds: at most %d tofu processes alive; RSS %d MiB", idle, maxAlive, rssIdle>>10)
	if maxAlive > 0 {
		t.Errorf("%d processes alive under the work dir while idle: %v", maxAlive, alive)
	}
	if n <= 1000 && rssFull>>10 > int64(rssMax) {
		t.Errorf("RSS %d MiB with %d Services, goal <= %d MiB", rssFull>>10, n, rssMax)
	}

	// Restart with every workspace unchanged: 0 tofu starts.
	ccm.Stop()
	before := len(readTofuStarts(t, starts))
	restarted := time.Now()
	cfg, _ = config(drift)
	ccm = startCCM(t, cluster, cfg)
	eventually(t, scaleTimeout(n), fmt.Sprintf("%d workspaces found applied after the restart", n), func(context.Context) error {
		if got := noopApplies(t, cluster, ccm); got < n {
			return fmt.Errorf("%d of %d workspaces found applied", got, n)
		}
		return nil
	})
	resynced := time.Since(restarted)
	time.Sleep(30 * time.Second)
	after := readTofuStarts(t, starts)[before:]
	t.Logf("CCM_SCALE: restart with %d unchanged workspaces: %d tofu starts (every workspace found applied in %s, then 30s); RSS %d MiB",
		n, len(after), resynced.Round(time.Second), rssOf(t, ccm)>>10)
	if len(after) > 0 {
		t.Errorf("the restart started %d tofu processes, want 0; the first: %v", len(after), after[0])
	}

	// The first drift round after the restart: its plans' starts.
	var first time.Time
	eventually(t, drift+drift/10+2*time.Minute, "the first drift plan", func(context.Context) error {
		for _, s := range readTofuStarts(t, starts)[before:] {
			if s.cmd == "plan" {
				first = s.at
				return nil
			}
		}
		return fmt.Errorf("no drift plan yet (%s after the restart)", time.Since(restarted).Round(time.Second))
	})
	time.Sleep(time.Until(first.Add(drift + 30*time.Second)))
	perWorkspace, perSecond := map[string]int{}, map[int64]int{}
	for _, s := range readTofuStarts(t, starts)[before:] {
		if s.cmd != "plan" || s.at.Before(first) || !s.at.Before(first.Add(drift)) {
			continue
		}
		perWorkspace[s.workspace]++
		perSecond[s.at.Unix()]++
	}
	twice, busiest := 0, 0
	for _, c := range perWorkspace {
		if c > 1 {
			twice++
		}
	}
	for _, c := range perSecond {
		busiest = max(busiest, c)
	}
	allowed := max(1, n/100)
	t.Logf("CCM_SCALE: drift round over %s: %d of %d load balancers re-planned, %d twice; busiest second %d plans (goal <= %d, 1%%); load average %s",
		drift, len(perWorkspace), n, twice, busiest, allowed, uptime())
	t.Logf("CCM_SCALE: N=%d rss_mib=%d per_service_kib=%.1f per_node_kib=%.1f idle_tofu=%d restart_tofu=%d drift_checked=%d drift_busiest_second=%d",
		n, rssFull>>10, perService, perNode, maxAlive, len(after), len(perWorkspace), busiest)
	if twice > 0 {
		t.Errorf("%d load balancers were re-planned twice in one drift interval", twice)
	}
	if busiest > allowed {
		t.Errorf("a second held %d drift plans, goal <= %d (1%% of %d)", busiest, allowed, n)
	}
	if len(perWorkspace) < n*9/10 {
		t.Errorf("the drift round re-planned %d of %d load balancers in its interval", len(perWorkspace), n)
	}
}

// scaleEnvInt is the positive number in env, or def when unset.
func scaleEnvInt(t *testing.T, env string, def int) int {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		t.Fatalf("%s=%q: want a number", env, v)
	}
	return i
}

// scaleTimeout is how long N Services may take to converge on this
// machine: 15 minutes and a second per load balancer.
func scaleTimeout(n int) time.Duration { return 15*time.Minute + time.Duration(n)*time.Second }

// writeTofuWrapper writes an executable "tofu" into dir/wrapper that
// appends "<unix time> <workspace> <args>" to log for every start and
// execs tofu.
func writeTofuWrapper(t *testing.T, dir, tofu, log string) string {
	t.Helper()
	wdir := filepath.Join(dir, "wrapper")
	if err := os.MkdirAll(wdir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s %%s %%s\\n' \"$(date +%%s.%%N)\" \"${TFCCM_WORKSPACE:-$(pwd -P)}\" \"$*\" >>%q\nexec %q \"$@\"\n", log, tofu)
	p := filepath.Join(wdir, "tofu")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// scaleUseWrapper points the cloud config's terraform.binary at wrapper.
func scaleUseWrapper(t *testing.T, cfg, tofu, wrapper string) string {
	t.Helper()
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), fmt.Sprintf("binary = %q", tofu), fmt.Sprintf("binary = %q", wrapper), 1)
	if s == string(b) {
		t.Fatalf("no terraform.binary = %q in %s", tofu, cfg)
	}
	if err := os.WriteFile(cfg, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// tofuStart is one line of the wrapper's log.
type tofuStart struct {
	at        time.Time
	workspace string
	cmd       string // tofu's subcommand: the first argument not a flag
	line      string
}

func (s tofuStart) String() string { return s.line }

// readTofuStarts reads the wrapper's log, in order of writing.
func readTofuStarts(t *testing.T, log string) []tofuStart {
	t.Helper()
	f, err := os.Open(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []tofuStart
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		sec, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		s := tofuStart{at: time.Unix(0, int64(sec*1e9)), workspace: filepath.Base(fields[1]), line: sc.Text()}
		for _, a := range fields[2:] {
			if !strings.HasPrefix(a, "-") {
				s.cmd = a
				break
			}
		}
		out = append(out, s)
	}
	return out
}

// waitTofuQuiet waits until the wrapper's log has not grown for quiet.
func waitTofuQuiet(t *testing.T, log string, quiet time.Duration) {
	t.Helper()
	last, since := -1, time.Now()
	for deadline := time.Now().Add(30 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		if n := len(readTofuStarts(t, log)); n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) >= quiet {
			return
		}
	}
	t.Fatalf("tofu kept starting for 30 minutes")
}

var noopMetric = regexp.MustCompile(`(?m)^tfccm_workspace_operations_total\{operation="apply",result="noop"\} (\d+)$`)

// noopApplies is how many applies the CCM found already applied (no tofu).
func noopApplies(t *testing.T, cluster *devcluster.Cluster, ccm *harness.CCM) int {
	t.Helper()
	m := noopMetric.FindStringSubmatch(ccmMetrics(t, cluster, ccm))
	if m == nil {
		return 0
	}
	v, _ := strconv.Atoi(m[1])
	return v
}

var heapMetric = regexp.MustCompile(`(?m)^go_memstats_heap_inuse_bytes ([0-9.e+]+)$`)

// scaleHeap is the CCM's Go heap in use in bytes (0 when not exported).
func scaleHeap(t *testing.T, cluster *devcluster.Cluster, ccm *harness.CCM) int64 {
	t.Helper()
	m := heapMetric.FindStringSubmatch(ccmMetrics(t, cluster, ccm))
	if m == nil {
		return 0
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	return int64(f)
}
