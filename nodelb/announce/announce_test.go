package announce

import (
	"net/netip"
	"path/filepath"
	"slices"
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

func TestRecord(t *testing.T) {
	r := NewRecord(filepath.Join(t.TempDir(), "vips.json"))
	a := Held{Interface: "eth0", Address: netip.MustParseAddr("10.0.0.1")}
	b := Held{Interface: "eth0", Address: netip.MustParseAddr("fd00::1")}
	for _, step := range []struct {
		h    Held
		held bool
		want []Held
	}{
		{a, true, []Held{a}},
		{a, true, []Held{a}},
		{b, true, []Held{a, b}},
		{a, false, []Held{b}},
		{a, false, []Held{b}},
	} {
		if err := step.h.setIn(r, step.held); err != nil {
			t.Fatal(err)
		}
		got, err := NewRecord(r.path).List()
		if err != nil || !slices.Equal(got, step.want) {
			t.Fatalf("after Set(%v, %v): %v, %v; want %v", step.h, step.held, got, err, step.want)
		}
	}
}

func (h Held) setIn(r *Record, held bool) error { return r.Set(h, held) }
