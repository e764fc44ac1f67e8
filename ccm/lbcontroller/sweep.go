package lbcontroller

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/workspace"
)

// The orphan sweep: a load balancer workspace whose Service no longer
// exists (deleted while tfccm was down with the finalizer removed by
// hand, or leaked by any race) is found and destroyed. It is looked for in
// the work dir and, for a backend that keeps a catalog (kubernetes, pg,
// s3, ...: workspace/catalog.go), in the state backend, where a new
// controller with an empty work dir finds it with its owner's UID and the
// configuration it was last applied with. A workspace whose Service
// exists, whatever its type, is never touched. In review mode the destroy
// is a plan published for approval like any other.

const (
	// sweepInterval is how often the work dir is swept (jittered).
	sweepInterval = 10 * time.Minute
	// orphanMinAge keeps the sweep away from workspaces written moments
	// ago (a Service the informer has not delivered yet).
	orphanMinAge = 2 * time.Minute
	// catalogMinAge is the same for a catalog entry, whose owner is
	// looked up again right before its destroy: an entry is written after
	// an apply, so its Service has existed for at least that apply's time,
	// and the informer's lag is well below this.
	catalogMinAge = 30 * time.Second
)

// Where the sweep found an orphan (the source label).
const (
	orphanInWorkDir      = "work_dir"
	orphanInStateBackend = "state_backend"
)

var (
	orphansDestroyed = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "tfccm_load_balancer",
		Name:           "orphans_destroyed_total",
		Help:           "Load balancer workspaces destroyed by the orphan sweep because their Service no longer exists, by where they were found (work_dir, state_backend).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"source"})
	registerProviderMetrics sync.Once
)

// services gives the sweep the Services known to the API (the informer).
type serviceSource struct {
	lister corelisters.ServiceLister
	synced cache.InformerSynced
}

// runSweep sweeps every interval (jittered) until ctx ends, the first
// time as soon as the Service informer has synced (a new controller finds
// what leaked while none ran at once), and again as soon as a candidate
// skipped for its age is old enough.
func (l *loadBalancers) runSweep(ctx context.Context, interval time.Duration) {
	registerProviderMetrics.Do(func() { legacyregistry.MustRegister(orphansDestroyed) })
	_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		l.mu.Lock()
		src := l.svcSource
		l.mu.Unlock()
		return src != nil && src.synced(), nil
	})
	if l.review != nil {
		go wait.UntilWithContext(ctx, l.checkOrphanApprovals, routesApprovalPoll)
	}
	for ctx.Err() == nil {
		n, again, err := l.sweep(ctx, time.Now())
		if err != nil {
			klog.ErrorS(err, "Orphaned load balancer sweep failed")
		} else if n > 0 {
			klog.InfoS("Orphaned load balancer sweep", "destroying", n)
		}
		next := wait.Jitter(interval, 0.2)
		if again > 0 && again < next {
			next = again
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// sweepAgain tracks the soonest time a candidate skipped for its age may
// be swept.
type sweepAgain struct {
	now  time.Time
	wait time.Duration // 0: none
}

// young reports whether something written at was written less than min
// ago, and if so records when it will not be.
func (a *sweepAgain) young(at time.Time, min time.Duration) bool {
	left := at.Add(min).Sub(a.now)
	if left <= 0 {
		return false
	}
	left += time.Second
	if a.wait == 0 || left < a.wait {
		a.wait = left
	}
	return true
}

// liveServices is what the sweep knows of the existing Services.
type liveServices struct {
	workspaces map[string]bool // their load balancer workspaces' names
	uids       map[types.UID]bool
}

// sweep destroys the load balancer workspaces of Services that no longer
// exist and reports how many it submitted, and how soon a candidate
// skipped for its age may be swept (0: none was).
func (l *loadBalancers) sweep(ctx context.Context, now time.Time) (int, time.Duration, error) {
	l.mu.Lock()
	src := l.svcSource
	l.mu.Unlock()
	if src == nil || !src.synced() {
		return 0, 0, nil // no trustworthy view of the Services yet
	}
	svcs, err := src.lister.List(labels.Everything())
	if err != nil {
		return 0, 0, err
	}
	live := liveServices{workspaces: make(map[string]bool, len(svcs)), uids: make(map[types.UID]bool, len(svcs))}
	for _, s := range svcs {
		live.workspaces[l.render.WorkspaceName(s)] = true
		live.uids[s.UID] = true
	}
	again := &sweepAgain{now: now}
	n, err := l.sweepWorkDir(again, live)
	if err != nil {
		return n, again.wait, err
	}
	m, err := l.sweepBackend(ctx, again, live)
	if err != nil || l.review == nil {
		return n + m, again.wait, err
	}
	if _, err := l.review.sweepPlans(ctx, again, live.uids, l.planInUse); err != nil {
		return n + m, again.wait, err
	}
	return n + m, again.wait, nil
}

// planInUse reports whether workspace ws's plan is the engine's current
// work: an orphan's destroy, or a workspace pending, running or awaiting
// approval.
func (l *loadBalancers) planInUse(ws string) bool {
	l.mu.Lock()
	_, orphan := l.orphans[ws]
	l.mu.Unlock()
	if orphan {
		return true
	}
	switch l.engine.Status(ws).Phase {
	case workspace.PhasePending, workspace.PhaseRunning, workspace.PhaseAwaitingApproval:
		return true
	}
	return false
}

// sweepable tells whether workspace name may be an orphan: not a live
// Service's, a load balancer's, and not destroyed or being destroyed.
func (l *loadBalancers) sweepable(name string, live liveServices) bool {
	if live.workspaces[name] || !l.render.IsLoadBalancerWorkspace(name) || l.isDeleted(name) {
		return false
	}
	st := l.engine.Status(name)
	return st.Phase != workspace.PhaseDestroyed && !(st.Destroy && st.Phase != workspace.PhaseFailed)
}

// sweepWorkDir destroys the orphans among the work dir's workspaces.
func (l *loadBalancers) sweepWorkDir(again *sweepAgain, live liveServices) (int, error) {
	dirs, err := l.engine.Workspaces()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range dirs {
		if !l.sweepable(d.Name, live) || again.young(d.ModTime, orphanMinAge) {
			continue
		}
		spec, err := l.written(d.Name)
		if err != nil {
			klog.ErrorS(err, "Orphaned load balancer workspace cannot be read; not destroyed", "workspace", d.Name)
			continue
		}
		if l.destroyOrphan(spec, nil, orphanInWorkDir) {
			n++
		}
	}
	return n, nil
}

// sweepBackend destroys the orphans the state backend's catalog lists and
// the work dir does not hold, with the configuration the catalog kept.
func (l *loadBalancers) sweepBackend(ctx context.Context, again *sweepAgain, live liveServices) (int, error) {
	names, err := l.engine.Catalogued(ctx)
	if errors.Is(err, workspace.ErrNoCatalog) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		if !l.sweepable(name, live) || l.dirExists(name) {
			continue // the work dir's sweep has it
		}
		entry, err := l.engine.CatalogEntry(ctx, name)
		if err != nil {
			klog.ErrorS(err, "Orphaned load balancer's catalog entry cannot be read; not destroyed", "workspace", name)
			continue
		}
		if live.uids[types.UID(entry.Owner.UID)] || again.young(entry.AppliedAt, catalogMinAge) || l.ownerExists(entry.Owner) {
			continue
		}
		spec, err := l.render.WithBackend(entry.Spec())
		if err != nil {
			klog.ErrorS(err, "Orphaned load balancer's backend cannot be rendered; not destroyed", "workspace", name)
			continue
		}
		spec.Hash = spec.ContentHash()
		// The gone Service, as the catalog names it, gets the Events (and,
		// in review mode, the published plan is in its namespace).
		owner := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: entry.Owner.Namespace, Name: entry.Owner.Name, UID: types.UID(entry.Owner.UID)}}
		if l.destroyOrphan(spec, owner, orphanInStateBackend) {
			n++
		}
	}
	return n, nil
}

// ownerExists looks the owner up again in the informer's cache (reading
// the catalog entry took time).
func (l *loadBalancers) ownerExists(o workspace.Owner) bool {
	l.mu.Lock()
	src := l.svcSource
	l.mu.Unlock()
	svc, err := src.lister.Services(o.Namespace).Get(o.Name)
	return err == nil && string(svc.UID) == o.UID
}

// destroyOrphan submits the destroy of an orphan found in source; owner,
// when known, is its gone Service.
func (l *loadBalancers) destroyOrphan(spec workspace.Spec, owner *corev1.Service, source string) bool {
	if owner != nil {
		// Known as an orphan before its destroy runs: its plan Secret,
		// in review mode, is not owned by the gone Service.
		l.markDeleted(spec.Name, owner)
		l.mu.Lock()
		l.orphans[spec.Name] = owner
		l.mu.Unlock()
	}
	if _, err := l.engine.Destroy(spec); err != nil {
		klog.ErrorS(err, "Destroy orphaned load balancer workspace", "workspace", spec.Name, "source", source)
		l.mu.Lock()
		delete(l.orphans, spec.Name)
		l.mu.Unlock()
		return false
	}
	l.mu.Lock()
	l.deleted[spec.Name] = true
	l.mu.Unlock()
	if owner != nil {
		klog.InfoS("Destroying orphaned load balancer found in the state backend: its Service no longer exists", "workspace", spec.Name,
			"service", klog.KObj(owner), "serviceUID", owner.UID)
	} else {
		klog.InfoS("Destroying orphaned load balancer workspace: its Service no longer exists", "workspace", spec.Name)
	}
	orphansDestroyed.WithLabelValues(source).Inc()
	return true
}

// checkOrphanApprovals looks for the approval of each orphan's destroy
// plan awaiting one (review mode; the Service to annotate is gone).
func (l *loadBalancers) checkOrphanApprovals(ctx context.Context) {
	l.mu.Lock()
	owners := make(map[string]*corev1.Service, len(l.orphans))
	for ws, o := range l.orphans {
		owners[ws] = o
	}
	l.mu.Unlock()
	for ws, owner := range owners {
		switch l.engine.Status(ws).Phase {
		case workspace.PhaseAwaitingApproval:
			l.review.approveOrphan(ctx, owner, ws)
		case workspace.PhaseDestroyed:
			l.mu.Lock()
			delete(l.orphans, ws)
			l.mu.Unlock()
		}
	}
}
