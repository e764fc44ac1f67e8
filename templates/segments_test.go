package templates

import (
	"net/netip"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/tfccm/tfccm/config"
)

// TestSegmentsVal: service.segments has an entry per address on a pool's
// segment, with the subnet of the address's family, and none for an
// address on the default segment.
func TestSegmentsVal(t *testing.T) {
	n := &config.PoolNetwork{Interface: "vlan20", Hosts: []string{"lb-b"}, Subnet: "10.0.20.0/24", Subnet6: "fd00:20::/64"}
	ips := []netip.Addr{netip.MustParseAddr("10.0.20.5"), netip.MustParseAddr("fd00:20::5")}
	for _, tc := range []struct {
		name string
		segs []*config.Segment
		want map[string]string // address -> subnet
	}{
		{"none", nil, nil},
		{"both families", []*config.Segment{{Pool: "vlan20", Network: n}, {Pool: "vlan20", Network: n}}, map[string]string{"10.0.20.5": "10.0.20.0/24", "fd00:20::5": "fd00:20::/64"}},
		{"IPv6 on the default segment", []*config.Segment{{Pool: "vlan20", Network: &config.PoolNetwork{Interface: "vlan20"}}, nil}, map[string]string{"10.0.20.5": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := segmentsVal(ips, tc.segs)
			if !v.Type().Equals(cty.Map(SegmentType)) || v.LengthInt() != len(tc.want) {
				t.Fatalf("segments %#v, want %d entries of SegmentType", v, len(tc.want))
			}
			for a, subnet := range tc.want {
				e := v.Index(cty.StringVal(a))
				got := ""
				if s := e.GetAttr("subnet"); !s.IsNull() {
					got = s.AsString()
				}
				if got != subnet || e.GetAttr("pool").AsString() != "vlan20" || e.GetAttr("interface").AsString() != "vlan20" {
					t.Errorf("%s: %#v, want subnet %q", a, e, subnet)
				}
			}
		})
	}
}
