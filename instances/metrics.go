package instances

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// staleness reports, per state source, how old the snapshot serving
// lookups is (the time since its read started), read at scrape time from
// the Store started last (the CCM runs one).
var stalenessDesc = metrics.NewDesc("tfccm_state_source_staleness_seconds",
	"Age of each state source's snapshot serving instance lookups (since its read started); grows while reads fail. Absent until the first read succeeds.",
	[]string{"source"}, nil, metrics.ALPHA, "")

type storeCollector struct {
	metrics.BaseStableCollector
	mu    sync.Mutex
	store *Store
}

var (
	collector    = &storeCollector{}
	registerOnce sync.Once
)

func (c *storeCollector) set(s *Store) {
	registerOnce.Do(func() { legacyregistry.CustomMustRegister(collector) })
	c.mu.Lock()
	c.store = s
	c.mu.Unlock()
}

func (c *storeCollector) DescribeWithStability(ch chan<- *metrics.Desc) { ch <- stalenessDesc }

func (c *storeCollector) CollectWithStability(ch chan<- metrics.Metric) {
	c.mu.Lock()
	s := c.store
	c.mu.Unlock()
	for name, age := range s.staleness() {
		ch <- metrics.NewLazyConstMetric(stalenessDesc, metrics.GaugeValue, age.Seconds(), name)
	}
}

// staleness is the age of each source's current snapshot; sources never
// read successfully are left out.
func (s *Store) staleness() map[string]time.Duration {
	out := map[string]time.Duration{}
	if s == nil {
		return out
	}
	for _, src := range s.sources {
		if snap := src.snap.Load(); snap != nil {
			out[src.src.Name()] = src.opts.Now().Sub(snap.readAt)
		}
	}
	return out
}
