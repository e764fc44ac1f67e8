package nodes

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/workspace/jobrunner"
)

// What the runner bench measures: kube-apiserver's writes, the runner
// Jobs' and pods' times, and object sizes.

// writeKey is one series of apiserver_request_total: a write verb on a
// resource (with its subresource: pods/status, pods/binding, ...).
type writeKey struct{ verb, resource string }

// writeCounts are request counts by write verb and resource.
type writeCounts map[writeKey]float64

// writeVerbs are the verbs that write.
var writeVerbs = []string{"POST", "PUT", "PATCH", "DELETE"}

// apiserverWrites reads kube-apiserver's /metrics and returns its
// apiserver_request_total by write verb and resource, over every code.
func apiserverWrites(t *testing.T, client kubernetes.Interface) writeCounts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("kube-apiserver /metrics: %v", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("kube-apiserver /metrics: %v", err)
	}
	fam := fams["apiserver_request_total"]
	if fam == nil {
		t.Fatal("kube-apiserver /metrics has no apiserver_request_total")
	}
	w := writeCounts{}
	for _, m := range fam.GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if !slices.Contains(writeVerbs, l["verb"]) {
			continue
		}
		res := l["resource"]
		if l["subresource"] != "" {
			res += "/" + l["subresource"]
		}
		w[writeKey{l["verb"], res}] += m.GetCounter().GetValue()
	}
	return w
}

// minus is w - o per series.
func (w writeCounts) minus(o writeCounts) writeCounts {
	d := writeCounts{}
	for k, v := range w {
		if v -= o[k]; v > 0 {
			d[k] = v
		}
	}
	return d
}

// lessIdle takes away the idle writes (idle counted over idleFor) that
// the cluster makes anyway over d: kubelets' leases and node status,
// leader elections.
func (w writeCounts) lessIdle(idle writeCounts, idleFor, d time.Duration) writeCounts {
	out := writeCounts{}
	for k, v := range w {
		if v -= idle[k] * d.Seconds() / idleFor.Seconds(); v > 0 {
			out[k] = v
		}
	}
	return out
}

func (w writeCounts) total() float64 {
	var s float64
	for _, v := range w {
		s += v
	}
	return s
}

func (w writeCounts) verb(verb string) float64 {
	var s float64
	for k, v := range w {
		if k.verb == verb {
			s += v
		}
	}
	return s
}

// byResource lists the writes per apply (n applies) by resource and
// verb, largest first, leaving out those under 0.1.
func (w writeCounts) byResource(n int) string {
	keys := slices.Collect(maps.Keys(w))
	sort.Slice(keys, func(i, j int) bool { return w[keys[i]] > w[keys[j]] })
	var parts []string
	for _, k := range keys {
		if v := w[k] / float64(n); v >= 0.1 {
			parts = append(parts, fmt.Sprintf("%s %s %.1f", k.resource, k.verb, v))
		}
	}
	return strings.Join(parts, ", ")
}

// objectSizes sums the sizes of objects as etcd stores them (protobuf).
type objectSizes struct{ n, total, max int }

func (s *objectSizes) add(size int) {
	s.n++
	s.total += size
	s.max = max(s.max, size)
}

func (s objectSizes) mean() float64 {
	if s.n == 0 {
		return 0
	}
	return float64(s.total) / float64(s.n)
}

func (s objectSizes) String() string {
	return fmt.Sprintf("%.0f B (max %d B, %d objects)", s.mean(), s.max, s.n)
}

// stateSizes are the sizes of the load balancers' workspaces' state
// Secrets and lock Leases in the state's namespace (the kubernetes backend's
// tfstate-default-lb-... and lock-tfstate-default-lb-...).
func stateSizes(t *testing.T, client kubernetes.Interface) (state, locks objectSizes) {
	t.Helper()
	ctx := context.Background()
	secrets, err := client.CoreV1().Secrets(stateNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leases, err := client.CoordinationV1().Leases(stateNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	add := func(s *objectSizes, name, prefix string, size int) {
		if strings.HasPrefix(name, prefix+"lb-") {
			s.add(size)
		}
	}
	for i := range secrets.Items {
		add(&state, secrets.Items[i].Name, "tfstate-default-", secrets.Items[i].Size())
	}
	for i := range leases.Items {
		add(&locks, leases.Items[i].Name, "lock-tfstate-default-", leases.Items[i].Size())
	}
	return state, locks
}

// runnerCosts records, from informers on runner Jobs, pods and Secrets,
// when each was seen created, running and ended, and their sizes. Only
// load-balancer workspaces count (their name starts with "lb-").
type runnerCosts struct {
	mu      sync.Mutex
	all     map[string]bool // every runner Job (any workspace) → alive
	jobs    map[string]*jobSeen
	pods    map[string]*podSeen
	in, out objectSizes // input and result Secrets
	job     objectSizes // Job objects (as created)
	pod     objectSizes // pod objects (as created)
	// written sums the sizes of every version of a runner Job, pod and
	// Secret seen (each a write of etcd): what the runs write there.
	written int
}

type jobSeen struct{ created, deleted time.Time }

type podSeen struct {
	cmd, node, job            string
	created, running, stopped time.Time
}

func watchRunnerCosts(ctx context.Context, client kubernetes.Interface) *runnerCosts {
	r := &runnerCosts{}
	r.reset()
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(runnersNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = jobrunner.LabelRunner + "=job" }))
	lbOnly := func(obj any) bool {
		m, err := metaOf(obj)
		return err == nil && strings.HasPrefix(m.GetAnnotations()[jobrunner.AnnoWorkspace], "lb-")
	}
	_, _ = f.Batch().V1().Jobs().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			j, ok := obj.(*batchv1.Job)
			if !ok {
				return
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			r.all[j.Name] = true
			r.written += j.Size()
			if lbOnly(j) {
				r.jobs[j.Name] = &jobSeen{created: time.Now()}
				r.job.add(j.Size())
			}
		},
		UpdateFunc: func(_, obj any) {
			if j, ok := obj.(*batchv1.Job); ok {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.written += j.Size()
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if j, ok := obj.(*batchv1.Job); ok {
				r.mu.Lock()
				defer r.mu.Unlock()
				if _, seen := r.all[j.Name]; seen {
					r.all[j.Name] = false
				}
				if s := r.jobs[j.Name]; s != nil && s.deleted.IsZero() {
					s.deleted = time.Now()
				}
			}
		},
	})
	pod := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		now := time.Now()
		r.mu.Lock()
		defer r.mu.Unlock()
		r.written += p.Size()
		if !lbOnly(p) {
			return
		}
		s := r.pods[p.Name]
		if s == nil {
			s = &podSeen{cmd: p.Labels[jobrunner.LabelCommand], job: p.Labels["batch.kubernetes.io/job-name"], created: now}
			r.pods[p.Name] = s
			r.pod.add(p.Size())
		}
		s.node = p.Spec.NodeName
		for _, c := range jobrunner.ContainerStatuses(p) {
			if c.Name == "tofu" && (c.State.Running != nil || c.State.Terminated != nil) && s.running.IsZero() {
				s.running = now
			}
		}
		if (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) && s.stopped.IsZero() {
			s.stopped = now
		}
	}
	_, _ = f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: pod, UpdateFunc: func(_, obj any) { pod(obj) },
	})
	_, _ = f.Core().V1().Secrets().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			s, ok := obj.(*corev1.Secret)
			if !ok {
				return
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			r.written += s.Size()
			switch name := s.Name; {
			case strings.Contains(name, "-in-"):
				r.in.add(s.Size())
			case strings.Contains(name, "-out-"):
				r.out.add(s.Size())
			}
		},
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return r
}

func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", obj)
	}
	return m, nil
}

// reset forgets everything seen so far (the runs before a burst).
func (r *runnerCosts) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all, r.jobs, r.pods = map[string]bool{}, map[string]*jobSeen{}, map[string]*podSeen{}
	r.in, r.out, r.job, r.pod, r.written = objectSizes{}, objectSizes{}, objectSizes{}, objectSizes{}, 0
}

// allJobs is the number of runner Jobs of any workspace seen since reset.
func (r *runnerCosts) allJobs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.all)
}

// waitSettled waits (best effort, up to 3 minutes) until a runner Job
// has been seen and none is left: the runs a new CCM starts for its
// routes and catalog, which would otherwise count in the burst.
func (r *runnerCosts) waitSettled(t *testing.T) {
	t.Helper()
	err := harness.Eventually(context.Background(), 3*time.Minute, "the CCM's start-up runner Jobs end", func(context.Context) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		alive := 0
		for _, a := range r.all {
			if a {
				alive++
			}
		}
		if len(r.all) == 0 || alive > 0 {
			return fmt.Errorf("%d runner Jobs seen, %d alive", len(r.all), alive)
		}
		return nil
	})
	if err != nil {
		t.Logf("RUNNERS: %v (going on: those count in the burst)", err)
	}
}

// summary describes the runner pods of n applies: pods per apply by
// command and node, wall time per Job (created to deleted, as the
// stand-in sees it), pod start latency (created to tofu's container
// running), the time a pod runs, and the bytes of the objects per run.
func (r *runnerCosts) summary(n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	cmds, nodes := map[string]int{}, map[string]int{}
	var start, run, jobWall []time.Duration
	for _, p := range r.pods {
		cmds[p.cmd]++
		nodes[p.node]++
		if !p.running.IsZero() {
			start = append(start, p.running.Sub(p.created))
			if !p.stopped.IsZero() {
				run = append(run, p.stopped.Sub(p.running))
			}
		}
	}
	for _, j := range r.jobs {
		if !j.deleted.IsZero() {
			jobWall = append(jobWall, j.deleted.Sub(j.created))
		}
	}
	runs := float64(len(r.pods))
	return fmt.Sprintf("runner pods %d (%.2f per apply; by command %v; by node %v); Job wall (created to deleted) %s; "+
		"pod start (created to tofu running) %s; pod run %s; per run: input Secrets %s, result Secrets %s, Job %s, pod %s; "+
		"etcd bytes written by runner Jobs, pods and Secrets per apply %.0f (their creations alone %.0f)",
		len(r.pods), runs/float64(n), cmds, nodes, durations(jobWall), durations(start), durations(run),
		r.in, r.out, r.job, r.pod, float64(r.written)/float64(n), float64(r.in.total+r.out.total+r.job.total+r.pod.total)/float64(n))
}

// durations is the mean, median and 90th percentile of ds.
func durations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	q := func(f float64) time.Duration { return ds[int(f*float64(len(ds)-1))] }
	return fmt.Sprintf("mean %s p50 %s p90 %s (%d)", (sum / time.Duration(len(ds))).Round(10*time.Millisecond),
		q(0.5).Round(10*time.Millisecond), q(0.9).Round(10*time.Millisecond), len(ds))
}
