package workspace

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/tfccm/tfccm/workspace/tofu"
)

const metricsSubsystem = "tfccm_workspace"

// Metric results.
// (Those of a tofu command are package tofu's: tofu.ResultSuccess...)
const (
	resultNoop    = "noop"
	resultRefused = "refused"
)

var (
	// operationsTotal counts tofu operations (init, plan, apply, destroy,
	// force_unlock, state_push) and no-op requests by result.
	operationsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "operations_total",
		Help:           "Terraform operations run by the workspace engine, by operation and result (success, error, locked, canceled, noop, refused; prepared: an init a prepared .terraform made unnecessary).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation", "result"})
	// operationDuration observes the wall time of each tofu operation.
	operationDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "operation_duration_seconds",
		Help:           "Wall time of Terraform operations run by the workspace engine.",
		Buckets:        []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation"})
	// queueDepth is the number of workspaces waiting for a worker.
	queueDepth = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      metricsSubsystem,
		Name:           "queue_depth",
		Help:           "Workspaces with pending work waiting for a worker.",
		StabilityLevel: metrics.ALPHA,
	})
	// inFlight is the number of workspaces being worked on.
	inFlight = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      metricsSubsystem,
		Name:           "runs_in_flight",
		Help:           "Workspaces with a Terraform run in progress.",
		StabilityLevel: metrics.ALPHA,
	})

	// providerChecksumMismatches counts tofu commands refused because a
	// provider's package did not match the checksums of the workspace's
	// dependency lock file (workspace/tofu/integrity.go).
	providerChecksumMismatches = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "provider_checksum_mismatches_total",
		Help:           "Terraform commands refused because a provider's package did not match the checksums of the workspace's dependency lock file (the pinned terraform.provider_lock_file, or the first init's), by provider address; the lock file is kept and the workspace's runs fail until the package matches.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"provider"})

	registerOnce sync.Once
)

// registerMetrics adds the engine's metrics to the legacy registry, which
// the CCM serves on /metrics.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(operationsTotal, operationDuration, queueDepth, inFlight, providerChecksumMismatches)
		legacyregistry.CustomMustRegister(collector)
	})
}

// The engine's state as gauges, read from its memory at scrape time
// (engineCollector): workspaces by phase, the oldest plan awaiting
// approval, each workspace's last successful apply.
var (
	workspacesDesc = metrics.NewDesc("tfccm_workspaces",
		"Workspaces by phase: Pending, Running, Applied, Failed, Invalid (the template rejected the inputs; not retried), AwaitingApproval.",
		[]string{"phase"}, nil, metrics.ALPHA, "")
	// deprecatedWorkspacesDesc is workspacesDesc's name before it lost its
	// stutter, kept for one release (the same values) so that alerts and
	// dashboards written against it keep working; removed in the next.
	deprecatedWorkspacesDesc = metrics.NewDesc(metricsSubsystem+"_workspaces",
		"Deprecated: use tfccm_workspaces (this name goes in the next release). Workspaces by phase.",
		[]string{"phase"}, nil, metrics.ALPHA, "")
	oldestApprovalDesc = metrics.NewDesc(metricsSubsystem+"_oldest_pending_approval_seconds",
		"Age of the oldest plan awaiting approval (review mode); 0 when none waits.",
		nil, nil, metrics.ALPHA, "")
	lastApplyDesc = metrics.NewDesc(metricsSubsystem+"_last_successful_apply_timestamp_seconds",
		"When each workspace's content was last applied successfully (Unix time).",
		[]string{"workspace"}, nil, metrics.ALPHA, "")
)

// collectedPhases are the phases workspacesDesc always reports (0 too).
var collectedPhases = []string{string(PhasePending), string(PhaseRunning), string(PhaseApplied), string(PhaseFailed), "Invalid", string(PhaseAwaitingApproval)}

// engineCollector reports the gauges of the engine started last (the
// CCM runs one).
type engineCollector struct {
	metrics.BaseStableCollector
	mu     sync.Mutex
	engine *Engine
}

var collector = &engineCollector{}

func (c *engineCollector) set(e *Engine) {
	c.mu.Lock()
	c.engine = e
	c.mu.Unlock()
}

func (c *engineCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- workspacesDesc
	ch <- deprecatedWorkspacesDesc
	ch <- oldestApprovalDesc
	ch <- lastApplyDesc
}

func (c *engineCollector) CollectWithStability(ch chan<- metrics.Metric) {
	c.mu.Lock()
	e := c.engine
	c.mu.Unlock()
	g := e.gauges(time.Now())
	for _, p := range collectedPhases {
		ch <- metrics.NewLazyConstMetric(workspacesDesc, metrics.GaugeValue, float64(g.phases[p]), p)
		ch <- metrics.NewLazyConstMetric(deprecatedWorkspacesDesc, metrics.GaugeValue, float64(g.phases[p]), p)
	}
	ch <- metrics.NewLazyConstMetric(oldestApprovalDesc, metrics.GaugeValue, g.oldestApproval.Seconds())
	for name, at := range g.lastApply {
		ch <- metrics.NewLazyConstMetric(lastApplyDesc, metrics.GaugeValue, float64(at.UnixNano())/1e9, name)
	}
}

// gauges is a snapshot of what engineCollector reports.
type gauges struct {
	phases         map[string]int
	oldestApproval time.Duration
	lastApply      map[string]time.Time
}

// gauges reads the engine's memory (a nil engine has no workspaces).
func (e *Engine) gauges(now time.Time) gauges {
	g := gauges{phases: map[string]int{}, lastApply: map[string]time.Time{}}
	if e == nil {
		return g
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, en := range e.ws {
		st := en.status
		phase := string(st.Phase)
		if st.Phase == PhaseFailed && tofu.IsInvalidInput(st.Err) {
			phase = "Invalid"
		}
		if phase != "" && st.Phase != PhaseDestroyed {
			g.phases[phase]++
		}
		if st.Phase == PhaseAwaitingApproval && !st.Since.IsZero() && now.Sub(st.Since) > g.oldestApproval {
			g.oldestApproval = now.Sub(st.Since)
		}
		if !en.rec.AppliedAt.IsZero() && st.Phase != PhaseDestroyed {
			g.lastApply[name] = en.rec.AppliedAt
		}
	}
	return g
}

// engineMetrics is what package tofu's runners measure, recorded in the
// engine's metrics (tofu.Metrics).
type engineMetrics struct{}

func (engineMetrics) Observe(op string, took time.Duration) {
	operationDuration.WithLabelValues(op).Observe(took.Seconds())
}

func (engineMetrics) Count(op, result string) { operationsTotal.WithLabelValues(op, result).Inc() }

func (engineMetrics) ChecksumMismatch(provider string) {
	providerChecksumMismatches.WithLabelValues(provider).Inc()
}
