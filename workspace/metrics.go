package workspace

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const metricsSubsystem = "tfccm_workspace"

// Metric results.
const (
	resultSuccess  = "success"
	resultError    = "error"
	resultLocked   = "locked"
	resultCanceled = "canceled"
	resultNoop     = "noop"
	resultRefused  = "refused"
)

var (
	// operationsTotal counts tofu operations (init, plan, apply, destroy,
	// force_unlock, state_push) and no-op requests by result.
	operationsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "operations_total",
		Help:           "Terraform operations run by the workspace engine, by operation and result (success, error, locked, canceled, noop, refused).",
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

	registerOnce sync.Once
)

// registerMetrics adds the engine's metrics to the legacy registry, which
// the CCM serves on /metrics.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(operationsTotal, operationDuration, queueDepth, inFlight)
	})
}
