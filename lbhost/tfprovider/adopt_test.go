package tfprovider

import (
	"strings"
	"testing"
)

// TestParseAdoptID: "keepalived:<instance>,<owner>,<pool>" parsed; any
// other id is not an adoption; a bad part is named.
func TestParseAdoptID(t *testing.T) {
	for _, tc := range []struct {
		id, want string // want: error substring; "" parses
		ok       bool
	}{
		{id: "keepalived:VI_WEB,c1_web,10.0.0.0/24", ok: true},
		{id: "c1_web,10.0.0.0/24", ok: false},
		{id: "keepalived:VI_WEB,c1_web", ok: true, want: "want keepalived:<instance>,<owner>,<pool>"},
		{id: "keepalived:VI } x {,c1_web,10.0.0.0/24", ok: true, want: "the instance name"},
		{id: "keepalived:VI_WEB,C1 web,10.0.0.0/24", ok: true, want: "the owner"},
		{id: "keepalived:VI_WEB,c1_web,10.0.0.1/24", ok: true, want: "the pool"},
	} {
		a, ok, err := parseAdoptID(tc.id)
		switch {
		case ok != tc.ok:
			t.Errorf("%s: adoption %t, want %t", tc.id, ok, tc.ok)
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.id, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.id, err, tc.want)
		case tc.ok && tc.want == "" && (a.instance != "VI_WEB" || a.owner != "c1_web" || a.pool.String() != "10.0.0.0/24"):
			t.Errorf("%s: parsed %+v", tc.id, a)
		}
	}
}
