package ipam

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The address pools' metrics (docs/metrics.md).
var (
	capacity = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "tfccm_address_pool_capacity",
		Help:           "Addresses in each load_balancer.address_pool.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"pool"})
	inUse = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "tfccm_address_pool_in_use",
		Help:           "Addresses of each address pool held by at least one Service.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"pool"})
	exhausted = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "tfccm_address_pool_exhausted_total",
		Help:           "Allocations refused because no pool that may serve the Service had a free address, by the first such pool.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"pool"})
)

func init() {
	legacyregistry.MustRegister(capacity, inUse, exhausted)
}
