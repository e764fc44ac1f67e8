package templates

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// overrideRejected counts override directory contents rejected as invalid
// (once per distinct content).
var overrideRejected = metrics.NewCounter(&metrics.CounterOpts{
	Subsystem:      "tfccm_templates",
	Name:           "override_rejected_total",
	Help:           "Template override directory contents rejected as invalid; the last good templates keep serving.",
	StabilityLevel: metrics.ALPHA,
})

// overrideValid is 1 while the override directory's current content is
// valid (and serving), 0 while it is rejected.
var overrideValid = metrics.NewGauge(&metrics.GaugeOpts{
	Subsystem:      "tfccm_templates",
	Name:           "override_valid",
	Help:           "1 while the template override directory's current content is valid and serving, 0 while it is rejected (the last good templates serve).",
	StabilityLevel: metrics.ALPHA,
})

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var registerMetrics sync.Once

func init() {
	registerMetrics.Do(func() { legacyregistry.MustRegister(overrideRejected, overrideValid) })
}
