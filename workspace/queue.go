package workspace

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
)

// The engine's work queue is client-go's rate-limited workqueue of
// workspace names. What it gives the engine:
//
//   - Per-workspace serialization: a name handed to a worker is not handed
//     to another one until that worker calls Done; a name added meanwhile
//     is kept (once) and queued again at Done.
//   - Coalescing: a name is queued at most once however often it is added;
//     the worker reads the newest desired spec from the entry, so only that
//     one is applied.
//   - Bounded parallelism: Options.Parallelism workers call Get.
//   - Retries: a failed workspace is added again after its backoff delay
//     (AddAfter); the rate limiter is the per-workspace backoff below. The
//     queue keeps one pending delay per name, the earliest: a name woken
//     before its Status.NextRetry (by a delay left from replaced work) runs
//     nothing and is added again for NextRetry (process).
//   - Shutdown: ShutDown makes Add and AddAfter no-ops and ends pending
//     delays; workers take what is still queued without running it.
//
// Only names travel through the queue; everything else is in the entry,
// guarded by Engine.mu. Queue calls are made with or without Engine.mu
// held; the queue never calls back into the engine.

// queueName names the queue in the metrics provider.
const queueName = "tfccm_workspace"

func newQueue(retries *retryBackoff) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig[string](retries, workqueue.TypedRateLimitingQueueConfig[string]{
		Name:            queueName,
		MetricsProvider: queueMetrics{},
	})
}

// worker processes workspaces until the queue is shut down. After ctx
// ended it only empties the queue: nothing queued is run.
func (e *Engine) worker(ctx context.Context) {
	for {
		name, shutdown := e.queue.Get()
		if shutdown {
			return
		}
		if ctx.Err() == nil {
			e.process(ctx, name)
		}
		e.queue.Done(name)
	}
}

// retryBackoff is the work queue's rate limiter: for each workspace, the
// jittered exponential backoff configured by Options.Backoff. When gives
// a failed workspace's next delay, Forget starts it over (new work,
// success, a plan awaiting approval).
type retryBackoff struct {
	cfg Backoff

	mu sync.Mutex
	bo map[string]*retryState
}

type retryState struct {
	bo       *backoff.ExponentialBackOff
	requeues int
}

var _ workqueue.TypedRateLimiter[string] = (*retryBackoff)(nil)

func newRetryBackoff(cfg Backoff) *retryBackoff {
	return &retryBackoff{cfg: cfg, bo: map[string]*retryState{}}
}

// When returns how long workspace name waits before its next attempt.
func (r *retryBackoff) When(name string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.bo[name]
	if st == nil {
		b := backoff.NewExponentialBackOff()
		b.InitialInterval = r.cfg.Initial
		b.MaxInterval = r.cfg.Max
		b.Multiplier = r.cfg.Multiplier
		b.RandomizationFactor = r.cfg.Jitter
		b.MaxElapsedTime = 0 // retry forever; the desired state stays desired
		b.Reset()
		st = &retryState{bo: b}
		r.bo[name] = st
	}
	st.requeues++
	return st.bo.NextBackOff()
}

// Forget starts workspace name's backoff over.
func (r *retryBackoff) Forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.bo, name)
}

// NumRequeues is how many delays When gave since the last Forget.
func (r *retryBackoff) NumRequeues(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.bo[name]; st != nil {
		return st.requeues
	}
	return 0
}

// queueMetrics is the work queue's metrics provider: its depth (names
// waiting for a worker, retries not yet due excluded) is the engine's
// queue_depth gauge; the queue's other metrics are not exported.
type queueMetrics struct{}

var _ workqueue.MetricsProvider = queueMetrics{}

type noMetric struct{}

func (noMetric) Inc()            {}
func (noMetric) Dec()            {}
func (noMetric) Set(float64)     {}
func (noMetric) Observe(float64) {}

func (queueMetrics) NewDepthMetric(string) workqueue.GaugeMetric { return queueDepth }
func (queueMetrics) NewAddsMetric(string) workqueue.CounterMetric {
	return noMetric{}
}
func (queueMetrics) NewLatencyMetric(string) workqueue.HistogramMetric { return noMetric{} }
func (queueMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return noMetric{}
}
func (queueMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noMetric{}
}
func (queueMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noMetric{}
}
func (queueMetrics) NewRetriesMetric(string) workqueue.CounterMetric { return noMetric{} }

// driftRoundJitter stretches each drift round's period by up to 10%, so
// rounds do not stay in step with anything else periodic.
const driftRoundJitter = 0.1

// driftLoop runs a drift round every interval (jittered), the first one an
// interval after Start, until ctx ends.
// names gives the workspaces of a round; check re-plans one.
func driftLoop(ctx context.Context, interval time.Duration, names func() []string, check func(name string)) {
	first := true
	wait.JitterUntilWithContext(ctx, func(ctx context.Context) {
		if first {
			first = false
			return
		}
		driftRound(ctx, interval, names(), check)
	}, interval, driftRoundJitter, false)
}

// driftRound re-plans every applied workspace once, spread evenly over
// window: checks do not bunch up at the start of the round, so N workspaces do not
// re-plan (and call their cloud's APIs) in the same second. Workspaces are
// taken in name order, so each is re-planned about once per interval.
func driftRound(ctx context.Context, window time.Duration, names []string, check func(name string)) {
	start := time.Now()
	for i, at := range driftSchedule(len(names), window, rand.Float64) {
		t := time.NewTimer(time.Until(start.Add(at)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		check(names[i])
	}
}

// driftable lists, sorted, the workspaces a drift check would re-plan
// (those Reconcile accepts).
func (e *Engine) driftable() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var names []string
	for n, en := range e.ws {
		if en.desired != nil && !en.destroy && en.status.Phase == PhaseApplied {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// driftSchedule returns the offsets within window of n drift checks:
// window is cut into n equal slots and every check falls at the same
// random point of its slot (one phase per round, drawn from rnd, a float
// in [0,1)): the round is jittered, and no two checks are ever closer than
// window/n, so no second holds more than ceil(n/window in seconds) starts.
func driftSchedule(n int, window time.Duration, rnd func() float64) []time.Duration {
	out := make([]time.Duration, n)
	slot := float64(window) / float64(n)
	phase := rnd()
	for i := range out {
		out[i] = time.Duration((float64(i) + phase) * slot)
	}
	return out
}
