package workspace

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"

	"github.com/tfccm/tfccm/internal/repo"
)

// TestBoundedParallelism: with Parallelism 2 and four workspaces to apply,
// two run and two wait in the queue (queue_depth 2) until a worker is free.
func TestBoundedParallelism(t *testing.T) {
	bin, calls := countingBinary(t)
	work := t.TempDir()
	hold := filepath.Join(work, "hold") // testModule's apply waits while it exists
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e := newTestEngine(t, Options{Binary: bin, WorkDir: work, Parallelism: 2})
	var specs []Spec
	for i := range 4 {
		s := testSpec(fmt.Sprintf("par-%d", i), i, 0)
		specs = append(specs, s)
		if _, err := e.Apply(s); err != nil {
			t.Fatal(err)
		}
	}
	started := func() int {
		n := 0
		for _, s := range specs {
			if exists(filepath.Join(e.Dir(s.Name), "applied.log.start")) {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(time.Minute)
	for started() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("two applies never started: %v", calls())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Give a third worker, if there were one, time to start tofu.
	time.Sleep(1500 * time.Millisecond)
	if n, inits := started(), count(calls(), "init"); n != 2 || inits != 2 {
		t.Fatalf("with parallelism 2: %d applies and %d inits started, want 2 and 2", n, inits)
	}
	if v, _ := testutil.GetGaugeMetricValue(queueDepth); v != 2 {
		t.Errorf("queue_depth = %v with two workspaces waiting, want 2", v)
	}
	running := 0
	for _, s := range specs {
		if e.Status(s.Name).Phase == PhaseRunning {
			running++
		}
	}
	if running != 2 {
		t.Errorf("%d workspaces Running, want 2", running)
	}
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		waitApplied(t, e, s)
	}
	if n := count(calls(), "apply"); n != 4 {
		t.Errorf("%d applies, want 4", n)
	}
}

// failingSpec fails at plan on something other than its inputs (a file
// the module reads is missing: a transient failure, retried); n varies its
// hash.
func failingSpec(name string, n int) Spec {
	return Spec{Name: name, Files: map[string][]byte{
		"main.tf": []byte(`variable "n" {
  type = number
}

resource "terraform_data" "x" {
  input = file("${path.module}/missing-${var.n}")
}
`),
		"tfccm.auto.tfvars": []byte(fmt.Sprintf("n = %d\n", n)),
	}}
}

// TestRetriesFollowTheBackoff: a failing workspace is retried by the queue
// after the jittered exponential backoff that Status.NextRetry announces,
// never before it; new work starts the backoff over.
func TestRetriesFollowTheBackoff(t *testing.T) {
	type seen struct {
		r         Result
		failedAt  time.Time // Status.Since: when the attempt was recorded as failed
		nextRetry time.Time
		attempts  int
	}
	var mu sync.Mutex
	var got []seen
	var e *Engine
	e = newTestEngine(t, Options{
		Backoff: Backoff{Initial: 400 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.05},
		OnResult: func(name string, r Result) {
			st := e.Status(name)
			mu.Lock()
			defer mu.Unlock()
			got = append(got, seen{r, st.Since, st.NextRetry, st.Attempts})
		},
	})
	waitResults := func(hash string, n int) []seen {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			mu.Lock()
			var s []seen
			for _, g := range got {
				if g.r.Hash == hash {
					s = append(s, g)
				}
			}
			mu.Unlock()
			if len(s) >= n {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d results, want %d: %+v", len(s), n, s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	check := func(s []seen, want []time.Duration) {
		t.Helper()
		for i, w := range want {
			cur := s[i]
			if cur.r.Err == nil || cur.r.Attempt != i+1 || cur.attempts != i+1 {
				t.Fatalf("result %d: %+v (attempts %d), want failed attempt %d", i, cur.r, cur.attempts, i+1)
			}
			// NextRetry and Since are set together when the attempt fails.
			d := cur.nextRetry.Sub(cur.failedAt)
			if lo, hi := time.Duration(float64(w)*0.95)-time.Millisecond, time.Duration(float64(w)*1.05)+time.Millisecond; d < lo || d > hi {
				t.Errorf("attempt %d: next retry in %s, want %s ±5%%", i+1, d, w)
			}
			if i+1 < len(s) {
				next := s[i+1]
				if start := next.failedAt.Add(-next.r.Duration); start.Before(cur.nextRetry.Add(-10 * time.Millisecond)) {
					t.Errorf("attempt %d started %s before its NextRetry", i+2, cur.nextRetry.Sub(start))
				}
			}
		}
	}

	first := failingSpec("retry", 1)
	if _, err := e.Apply(first); err != nil {
		t.Fatal(err)
	}
	s := waitResults(first.ContentHash(), 4)
	check(s, []time.Duration{400 * time.Millisecond, 800 * time.Millisecond, time.Second})

	// New work: attempts and backoff start over.
	second := failingSpec("retry", 2)
	if _, err := e.Apply(second); err != nil {
		t.Fatal(err)
	}
	s = waitResults(second.ContentHash(), 3)
	check(s, []time.Duration{400 * time.Millisecond, 800 * time.Millisecond})
}

// TestEarlyWakeReschedulesRetry: the queue keeps one delayed add per name,
// the earliest; a workspace woken before its NextRetry (by a delay left
// from earlier work) runs nothing and is queued again for NextRetry, so
// its retry is not lost.
func TestEarlyWakeReschedulesRetry(t *testing.T) {
	e := unstartedEngine(t, Options{})
	spec := failingSpec("early", 1)
	spec.Hash = spec.ContentHash()
	e.mu.Lock()
	en := e.entry("early")
	en.desired = &spec
	en.status.Phase, en.status.Hash, en.status.Attempts = PhaseFailed, spec.Hash, 1
	en.status.NextRetry = time.Now().Add(300 * time.Millisecond)
	e.mu.Unlock()

	e.process(context.Background(), "early")
	if st := e.Status("early"); st.Phase != PhaseFailed || st.Attempts != 1 {
		t.Fatalf("early wake ran the workspace: %+v", st)
	}
	if n := e.queue.Len(); n != 0 {
		t.Fatalf("queued at once (%d), want after NextRetry", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.queue.Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("retry lost: not queued again after NextRetry")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if now := time.Now(); now.Before(e.Status("early").NextRetry) {
		t.Fatalf("queued %s before NextRetry", e.Status("early").NextRetry.Sub(now))
	}
}

// unstartedEngine is an engine without workers, whose queue is inspected
// directly; its queue is emptied at the end (queue_depth is global).
func unstartedEngine(t *testing.T, opts Options) *Engine {
	t.Helper()
	opts.Binary, opts.WorkDir = repo.Tofu(t), t.TempDir()
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.queue.ShutDown()
		for {
			name, shutdown := e.queue.Get()
			if shutdown {
				return
			}
			e.queue.Done(name)
		}
	})
	return e
}

// TestDriftSchedule: checks are spread evenly over the window, one per
// slot at one random phase, so no two fall in any span shorter than a slot
// (at 100 workspaces an hour, 36s); with one workspace per second of the
// window, at most one re-plans in any second.
func TestDriftSchedule(t *testing.T) {
	for _, n := range []int{1, 7, 100, 3600} {
		window := time.Hour
		at := driftSchedule(n, window, rand.Float64)
		if len(at) != n {
			t.Fatalf("n=%d: %d offsets", n, len(at))
		}
		slot := window / time.Duration(n)
		jittered := false
		for i, d := range at {
			if d < time.Duration(i)*slot || d >= time.Duration(i+1)*slot+time.Nanosecond {
				t.Fatalf("n=%d: check %d at %s, outside its slot [%s, %s)", n, i, d, time.Duration(i)*slot, time.Duration(i+1)*slot)
			}
			if d != time.Duration(i)*slot {
				jittered = true
			}
		}
		if !jittered {
			t.Errorf("n=%d: offsets are not jittered", n)
		}
		if got := maxWithin(at, slot-time.Nanosecond); got > 1 {
			t.Errorf("n=%d: %d checks within %s", n, got, slot)
		}
	}
	if got := maxWithin(driftSchedule(3600, time.Hour, rand.Float64), time.Second-time.Nanosecond); got > 1 {
		t.Errorf("3600 workspaces an hour: %d re-plans in one second", got)
	}
}

// maxWithin is the largest number of sorted offsets in a span shorter
// than d.
func maxWithin(at []time.Duration, d time.Duration) int {
	at = slices.Sorted(slices.Values(at))
	best, j := 0, 0
	for i := range at {
		for at[i]-at[j] >= d {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// TestDriftChecksAreSpread: the engine's drift loop checks every applied
// workspace once a round, the checks spread over the interval instead of
// all at once; workspaces not applied are not checked.
func TestDriftChecksAreSpread(t *testing.T) {
	const n = 40
	const interval = time.Second
	e, err := New(Options{Binary: repo.Tofu(t), WorkDir: t.TempDir(), DriftInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	checks := map[string][]time.Time{}
	e.driftCheck = func(name string) {
		mu.Lock()
		checks[name] = append(checks[name], time.Now())
		mu.Unlock()
	}
	e.mu.Lock()
	for i := range n + 2 {
		name := fmt.Sprintf("ws-%02d", i)
		spec := testSpec(name, i, 0)
		spec.Hash = spec.ContentHash()
		en := e.entry(name)
		en.desired = &spec
		en.status.Phase, en.status.Hash, en.status.AppliedHash = PhaseApplied, spec.Hash, spec.Hash
		switch i {
		case n:
			en.status.Phase = PhaseFailed
		case n + 1:
			en.destroy = true
		}
	}
	e.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	e.Start(ctx)
	t.Cleanup(func() {
		cancel()
		<-e.Done()
	})

	var first []time.Duration
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		first = first[:0]
		for _, ts := range checks {
			first = append(first, ts[0].Sub(start))
		}
		mu.Unlock()
		if len(first) >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d workspaces drift-checked", len(first), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	for _, name := range []string{fmt.Sprintf("ws-%02d", n), fmt.Sprintf("ws-%02d", n+1)} {
		if len(checks[name]) != 0 {
			t.Errorf("%s (not applied) was drift-checked", name)
		}
	}
	mu.Unlock()
	slices.Sort(first)
	if first[0] < interval {
		t.Errorf("first drift check %s after Start, want one interval (%s)", first[0], interval)
	}
	// All at once would put 40 checks within milliseconds; spread, the
	// first round spans most of the interval and any tenth of it holds
	// about 4 (up to 20 allows for a loaded machine delaying timers).
	if span := first[n-1] - first[0]; span < interval/2 {
		t.Errorf("first round's checks span %s, want most of %s: %v", span, interval, first)
	}
	if got := maxWithin(first, interval/10); got > 20 {
		t.Errorf("%d of %d checks within %s: %v", got, n, interval/10, first)
	}
}

// TestDriftLoopReconciles: with a DriftInterval, an applied workspace is
// re-planned by the drift loop without any call.
func TestDriftLoopReconciles(t *testing.T) {
	results := make(chan Result, 16)
	e := newTestEngine(t, Options{DriftInterval: time.Second, OnResult: func(_ string, r Result) { results <- r }})
	spec := testSpec("drift-loop", 1, 0)
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, spec)
	timeout := time.After(time.Minute)
	for {
		select {
		case r := <-results:
			if r.Drift {
				if r.Err != nil || r.Changed {
					t.Fatalf("drift run of an undrifted workspace: %+v", r)
				}
				return
			}
		case <-timeout:
			t.Fatal("the drift loop never re-planned the workspace")
		}
	}
}

// TestShutdownStopsCleanly: cancelling Start's context interrupts the
// running workspace, drops the queued one without running it, leaves
// queue_depth at zero and closes Done.
func TestShutdownStopsCleanly(t *testing.T) {
	bin, calls := countingBinary(t)
	work := t.TempDir()
	hold := filepath.Join(work, "hold")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ran []string
	e, err := New(Options{Binary: bin, WorkDir: work, Parallelism: 1, Timeout: time.Minute, GracePeriod: 10 * time.Second,
		OnResult: func(name string, _ Result) {
			mu.Lock()
			ran = append(ran, name)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.Start(ctx)
	t.Cleanup(func() {
		cancel()
		killStrays(t, work)
	})
	running, queued := testSpec("stop-running", 1, 0), testSpec("stop-queued", 2, 0)
	for _, s := range []Spec{running, queued} {
		if _, err := e.Apply(s); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for !exists(filepath.Join(e.Dir(running.Name), "applied.log.start")) {
		if time.Now().After(deadline) {
			t.Fatalf("apply never started: %v", calls())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	_ = os.Remove(hold) // let the provisioner end so tofu can stop
	select {
	case <-e.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("Done not closed 30s after cancel")
	}
	if st := e.Status(queued.Name); st.Phase != PhasePending {
		t.Errorf("queued workspace after shutdown: %+v, want Pending (not run)", st)
	}
	// The running workspace's result is reported only if its apply ended
	// on its own: a run the stop interrupted is no failure of the
	// workspace (no Warning on its Service; the next leader runs it).
	want := []string{running.Name}
	if st := e.Status(running.Name); st.Err != nil {
		want = nil
	}
	mu.Lock()
	if n := count(calls(), "init"); n != 1 || !slices.Equal(ran, want) {
		t.Errorf("%d inits, results for %v; want 1 and %v (the queued one must not start; an interrupted run is not reported)", n, ran, want)
	}
	mu.Unlock()
	if v, _ := testutil.GetGaugeMetricValue(queueDepth); v != 0 {
		t.Errorf("queue_depth = %v after shutdown, want 0", v)
	}
	// A stopped engine takes no more work.
	if _, err := e.Apply(testSpec("stop-late", 3, 0)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := count(calls(), "init"); n != 1 {
		t.Errorf("an Apply after shutdown ran tofu (%d inits)", n)
	}
}
