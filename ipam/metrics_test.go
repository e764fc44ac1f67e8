package ipam

import (
	"strings"
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
)

// TestPoolGauges: each pool's capacity and the addresses in use are
// published under the names with their unit and, for one release, under
// the deprecated names too, with the same values, on the registry the CCM
// serves; the deprecated ones say so in their help.
func TestPoolGauges(t *testing.T) {
	a := New(pools(t, `
address_pool "gauged" {
  addresses = ["10.9.0.0/30"]
}`))
	for _, name := range []string{"one", "two"} {
		if _, err := assign(t, a, svc(name, []int32{80}), nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name       string
		want       float64
		deprecated bool
	}{
		{"tfccm_address_pool_capacity_addresses", 4, false},
		{"tfccm_address_pool_in_use_addresses", 2, false},
		{"tfccm_address_pool_capacity", 4, true},
		{"tfccm_address_pool_in_use", 2, true},
	} {
		mfs, err := legacyregistry.DefaultGatherer.Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, mf := range mfs {
			if mf.GetName() != c.name {
				continue
			}
			found = true
			if got := strings.Contains(mf.GetHelp(), "Deprecated: use "); got != c.deprecated {
				t.Errorf("%s: help %q, deprecated %v", c.name, mf.GetHelp(), c.deprecated)
			}
			for _, m := range mf.GetMetric() {
				if m.GetLabel()[0].GetValue() == "gauged" && m.GetGauge().GetValue() != c.want {
					t.Errorf("%s{pool=gauged} = %v, want %v", c.name, m.GetGauge().GetValue(), c.want)
				}
			}
		}
		if !found {
			t.Errorf("the registry has no %s", c.name)
		}
	}
}
