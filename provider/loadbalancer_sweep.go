package provider

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
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
// hand, or leaked by any race) is found and destroyed. A workspace whose
// Service exists, whatever its type, is never touched.

const (
	// sweepInterval is how often the work dir is swept (jittered).
	sweepInterval = 10 * time.Minute
	// orphanMinAge keeps the sweep away from workspaces written moments
	// ago (a Service the informer has not delivered yet).
	orphanMinAge = 2 * time.Minute
)

var (
	orphansDestroyed = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      "tfccm_load_balancer",
		Name:           "orphans_destroyed_total",
		Help:           "Load balancer workspaces destroyed by the orphan sweep because their Service no longer exists.",
		StabilityLevel: metrics.ALPHA,
	})
	registerProviderMetrics sync.Once
)

// services gives the sweep the Services known to the API (the informer).
type serviceSource struct {
	lister corelisters.ServiceLister
	synced cache.InformerSynced
}

// runSweep sweeps every interval (jittered) until ctx ends, once the
// Service informer has synced.
func (l *loadBalancers) runSweep(ctx context.Context, interval time.Duration) {
	registerProviderMetrics.Do(func() { legacyregistry.MustRegister(orphansDestroyed) })
	wait.JitterUntilWithContext(ctx, func(context.Context) {
		if n, err := l.sweep(time.Now()); err != nil {
			klog.ErrorS(err, "Orphaned load balancer sweep failed")
		} else if n > 0 {
			klog.InfoS("Orphaned load balancer sweep", "destroying", n)
		}
	}, interval, 0.2, true)
}

// sweep destroys the load balancer workspaces of Services that no longer
// exist and reports how many it submitted.
func (l *loadBalancers) sweep(now time.Time) (int, error) {
	l.mu.Lock()
	src := l.svcSource
	l.mu.Unlock()
	if src == nil || !src.synced() {
		return 0, nil // no trustworthy view of the Services yet
	}
	svcs, err := src.lister.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	live := make(map[string]bool, len(svcs))
	for _, s := range svcs {
		live[l.render.WorkspaceName(s)] = true
	}
	dirs, err := l.engine.Workspaces()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range dirs {
		if live[d.Name] || !l.render.IsLoadBalancerWorkspace(d.Name) || now.Sub(d.ModTime) < orphanMinAge {
			continue
		}
		if st := l.engine.Status(d.Name); st.Phase == workspace.PhaseDestroyed || (st.Destroy && st.Phase != workspace.PhaseFailed) {
			continue // destroyed, or being destroyed
		}
		spec, err := l.written(d.Name)
		if err != nil {
			klog.ErrorS(err, "Orphaned load balancer workspace cannot be read; not destroyed", "workspace", d.Name)
			continue
		}
		if _, err := l.engine.Destroy(spec); err != nil {
			klog.ErrorS(err, "Destroy orphaned load balancer workspace", "workspace", d.Name)
			continue
		}
		l.mu.Lock()
		l.deleted[d.Name] = true
		l.mu.Unlock()
		klog.InfoS("Destroying orphaned load balancer workspace: its Service no longer exists", "workspace", d.Name)
		orphansDestroyed.Inc()
		n++
	}
	return n, nil
}
