package announce

import (
	"net/netip"
	"testing"
)

func TestEffectiveCaps(t *testing.T) {
	for _, tc := range []struct {
		status string
		want   uint64
		err    bool
	}{
		{"Name:\tx\nCapEff:\t0000000000003000\n", 0x3000, false},
		{"CapEff:\tzz\n", 0, true},
		{"Name:\tx\n", 0, true},
	} {
		got, err := effectiveCaps(tc.status)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("effectiveCaps(%q) = %x, %v", tc.status, got, err)
		}
	}
}

func TestMethod(t *testing.T) {
	if Method(netip.MustParseAddr("10.0.0.1")) != "gratuitous ARP" || Method(netip.MustParseAddr("fd00::1")) != "unsolicited neighbor advertisement" {
		t.Error("wrong announcement method")
	}
}
