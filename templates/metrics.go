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

var registerMetrics sync.Once

func init() {
	registerMetrics.Do(func() { legacyregistry.MustRegister(overrideRejected) })
}
