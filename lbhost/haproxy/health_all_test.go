package haproxy

import (
	"reflect"
	"testing"
)

// TestParseAllServerHealth: one pass over the dump gives every load
// balancer what ParseServerHealth gives it alone (c1_lb-a_x's backend is
// its own load balancer's, not c1_lb-a's), and nothing for a backend that
// is not be_<name>_<port>.
func TestParseAllServerHealth(t *testing.T) {
	dump := serversStateDump
	all := ParseAllServerHealth([]byte(dump + "7 be_noport 1 node-f 10.250.0.16 2 0 1 1 5 6 3 4 6 0 0 0 - 30090 - 0 10256 - - 0\n"))
	for _, name := range []string{"c1_lb-a", "c1_lb-a_x", "other"} {
		if want := ParseServerHealth([]byte(dump), name); !reflect.DeepEqual(all[name], want) {
			t.Errorf("%s: got %+v\nwant %+v", name, all[name], want)
		}
	}
	if len(all) != 3 {
		t.Errorf("load balancers %v, want c1_lb-a, c1_lb-a_x and other", all)
	}
}
