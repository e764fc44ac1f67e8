package ipam

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The address pools' metrics (docs/metrics.md), for the cluster admin who
// sizes the pools. The gauges are named after what they measure with
// their unit last (Prometheus' naming practice: node_filesystem_size_bytes).
var (
	capacity = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "tfccm_address_pool_capacity_addresses",
		Help:           "Addresses in each load_balancer.address_pool.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"pool"})
	inUse = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "tfccm_address_pool_in_use_addresses",
		Help:           "Addresses of each address pool held by at least one Service.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"pool"})
	exhausted = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "tfccm_address_pool_exhausted_total",
		Help:           "Allocations refused because no pool that may serve the Service had a free address, by the first such pool.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"pool"})
)

// The names the gauges had before they took a unit, kept for one release
// so that alerts and dashboards written against them keep working while
// they move to the new names; removed in the release after.
var (
	deprecatedCapacity = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "tfccm_address_pool_capacity",
		Help:           "Deprecated: use tfccm_address_pool_capacity_addresses (this name goes in the next release). Addresses in each load_balancer.address_pool.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"pool"})
	deprecatedInUse = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "tfccm_address_pool_in_use",
		Help:           "Deprecated: use tfccm_address_pool_in_use_addresses (this name goes in the next release). Addresses of each address pool held by at least one Service.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"pool"})
)

func init() {
	legacyregistry.MustRegister(capacity, inUse, exhausted, deprecatedCapacity, deprecatedInUse)
}

// setCapacity publishes the size of pool under both of its names.
func setCapacity(pool string, n float64) {
	capacity.WithLabelValues(pool).Set(n)
	deprecatedCapacity.WithLabelValues(pool).Set(n)
}

// setInUse publishes how many addresses of pool are held, under both of
// its names.
func setInUse(pool string, n int) {
	inUse.WithLabelValues(pool).Set(float64(n))
	deprecatedInUse.WithLabelValues(pool).Set(float64(n))
}

// forgetPool drops a removed pool's gauges.
func forgetPool(pool string) {
	for _, g := range []*metrics.GaugeVec{capacity, inUse, deprecatedCapacity, deprecatedInUse} {
		g.DeleteLabelValues(pool)
	}
}
