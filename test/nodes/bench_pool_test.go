package nodes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/deploy"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/harness"
)

// benchPool is the runner bench's pool mode (TFCCM_BENCH_MODES=pool):
// the chart upgraded to runner.pool (TFCCM_BENCH_POOL pods, default the
// parallelism), the same burst of n Services, the ratio to the in-process
// burst proc, apiserver writes per new load balancer, the pods' spread
// and, from the pooled pods' processes on this machine, each tofu
// command's time against its whole request in the pod (`tfccm run
// --exec`: unpack, tofu, pack). The Services are deleted afterwards. It
// returns the CCM pod now running.
func benchPool(t *testing.T, ic *inCluster, client kubernetes.Interface, baseFile, dir string, par, n int, proc *benchRun, oldCCM string, ccmLog func() string) *corev1.Pod {
	t.Helper()
	pool := par
	if v := os.Getenv("TFCCM_BENCH_POOL"); v != "" {
		var err error
		if pool, err = strconv.Atoi(v); err != nil || pool < 1 || pool > 64 {
			t.Fatalf("TFCCM_BENCH_POOL=%q: want 1..64", v)
		}
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	over := filepath.Join(dir, "pool.yaml")
	if err := os.WriteFile(over, []byte(benchPoolValues(par, true, pool)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := ic.rel.Helm("upgrade", "tfccm", filepath.Join(root, deploy.Chart), "--values", baseFile, "--values", over); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	ic.runnerSecret(t)
	waitReplaced(t, client, oldCCM)
	spread := waitPoolSpreadOver(t, client, pool, min(pool, benchNodes), 5*time.Minute, ccmLog)
	perNode := map[string]int{}
	for _, node := range spread {
		perNode[node]++
	}
	ctx, stop := context.WithCancel(context.Background())
	samples := samplePool(ctx, t, client)
	r := runBench(t, client, "pool", n, nil, ccmLog)
	stop()
	jobs, err := client.BatchV1().Jobs(runnersNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("RUNNERS: %d Services on %d nodes, parallelism %d, pool %d (pods per node %v): in-process %s, runner pool %s, ratio %.2f; load average %s",
		n, benchNodes, par, pool, perNode, proc.wall.Round(time.Second), r.wall.Round(time.Second), r.wall.Seconds()/proc.wall.Seconds(), strings.Join(strings.Fields(string(load))[:3], " "))
	t.Logf("RUNNERS: %s", r.summary())
	t.Logf("RUNNERS: pool writes per new load balancer %.1f (in-process %.1f); by resource: %s", r.writes.total()/float64(n), proc.writes.total()/float64(n), r.writes.byResource(n))
	t.Logf("RUNNERS: pool: %d Jobs in the runners' namespace; %s", len(jobs.Items), samples.summary(n))
	deleteServices(t, client, r.names, ccmLog)
	return waitCCMPod(t, client)
}

// waitPoolSpreadOver waits until the pool has n ready pods over exactly
// nodes nodes, no node with more than one pod over another, and returns
// them (pod → node).
func waitPoolSpreadOver(t *testing.T, client kubernetes.Interface, n, nodes int, timeout time.Duration, ccmLog func() string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := harness.Eventually(context.Background(), timeout, fmt.Sprintf("%d runner pool pods ready over %d nodes", n, nodes), func(ctx context.Context) error {
		list, err := client.CoreV1().Pods(runnersNamespace).List(ctx, metav1.ListOptions{LabelSelector: poolSelector})
		if err != nil {
			return err
		}
		clear(got)
		per := map[string]int{}
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && podIsReady(p.Status.Conditions) {
				got[p.Name] = p.Spec.NodeName
				per[p.Spec.NodeName]++
			}
		}
		lo, hi := n, 0
		for _, c := range per {
			lo, hi = min(lo, c), max(hi, c)
		}
		if len(got) != n || len(per) != nodes || hi-lo > 1 {
			return fmt.Errorf("%d ready, per node %v", len(got), per)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
	}
	return got
}

// poolSamples are the pooled pods' processes seen on this machine: each
// request (`tfccm run --exec`) and tofu command, by pid, first and last
// seen.
type poolSamples struct {
	mu   sync.Mutex
	seen map[int]*procSeen
}

type procSeen struct {
	what        string // "exec" or tofu's subcommand
	first, last time.Time
}

// samplePool samples the pooled pods' processes every 100 ms until ctx
// ends.
func samplePool(ctx context.Context, t *testing.T, client kubernetes.Interface) *poolSamples {
	s := &poolSamples{seen: map[int]*procSeen{}}
	list, err := client.CoreV1().Pods(runnersNamespace).List(ctx, metav1.ListOptions{LabelSelector: poolSelector})
	if err != nil {
		t.Fatal(err)
	}
	var uids []string
	for _, p := range list.Items {
		uids = append(uids, string(p.UID), strings.ReplaceAll(string(p.UID), "-", "_"))
	}
	inPool := func(pid int) bool {
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil {
			return false
		}
		for _, u := range uids {
			if strings.Contains(string(cg), u) {
				return true
			}
		}
		return false
	}
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		known := map[int]bool{} // pid → in the pool
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			now := time.Now()
			what := map[int]string{}
			for _, pid := range harness.Processes(func(args []string) bool {
				return len(args) > 2 && strings.HasSuffix(args[0], "/tfccm") && args[1] == "run" && args[2] == "--exec"
			}) {
				what[pid] = "exec"
			}
			for _, pid := range harness.Processes(func(args []string) bool {
				return len(args) > 1 && strings.HasSuffix(args[0], "/tofu") && !strings.HasPrefix(args[1], "-")
			}) {
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				if args := strings.Split(string(cmd), "\x00"); len(args) > 1 {
					what[pid] = args[1]
				} // else: it ended since it was listed
			}
			s.mu.Lock()
			for pid, w := range what {
				in, ok := known[pid]
				if !ok {
					in = inPool(pid)
					known[pid] = in
				}
				if !in {
					continue
				}
				if p := s.seen[pid]; p != nil && p.what == w {
					p.last = now
				} else {
					s.seen[pid] = &procSeen{what: w, first: now, last: now}
				}
			}
			s.mu.Unlock()
		}
	}()
	return s
}

// summary: per kind, the count (per Service) and mean time, and the
// share of the requests' time tofu took.
func (s *poolSamples) summary(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum, count := map[string]time.Duration{}, map[string]int{}
	for _, p := range s.seen {
		sum[p.what] += p.last.Sub(p.first)
		count[p.what]++
	}
	var kinds []string
	var tofu time.Duration
	for k := range sum {
		kinds = append(kinds, k)
		if k != "exec" {
			tofu += sum[k]
		}
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d (%.2f per Service, mean %s)", k, count[k], float64(count[k])/float64(n), (sum[k]/time.Duration(count[k])).Round(10*time.Millisecond)))
	}
	share := 0.0
	if sum["exec"] > 0 {
		share = 100 * tofu.Seconds() / sum["exec"].Seconds()
	}
	return fmt.Sprintf("split per command (pooled pods' processes, 100 ms samples): %s; tofu %.0f%% of the requests' time in the pods (the rest: unpack, provider links, pack)", strings.Join(parts, ", "), share)
}

// podIsReady reports whether a pod's conditions say Ready.
func podIsReady(conds []corev1.PodCondition) bool {
	for _, c := range conds {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
