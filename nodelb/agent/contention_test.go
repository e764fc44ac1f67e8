package agent

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/nodelb/vipapi"
)

// TestContention: a holder lists another node as contending for its
// address only when that node wrote its claim over this node's own, seen
// claim while it does not hear that node (a split brain); a takeover from
// a gone holder, or a hand-over between nodes that hear each other, is no
// contention; a contender drops out once heard again or after
// contenderTTL, and with the address released.
func TestContention(t *testing.T) {
	named := func(node string) decision {
		v := testVIP("web", "10.0.0.1", "Cluster", "a", "b")
		if node != "" {
			v.Status.Holder = node
			v.Status.Conditions = []metav1.Condition{{Type: vipapi.ConditionAnnounced, Status: metav1.ConditionTrue}}
		}
		return decision{Address: netip.MustParseAddr("10.0.0.1"), VIPs: []*vipapi.NodeVIP{v}}
	}
	alone := map[string]member{"a": {Name: "a"}}
	both := map[string]member{"a": {Name: "a"}, "b": {Name: "b"}}
	c := newContention()
	t0 := time.Now()
	for _, tc := range []struct {
		name    string
		status  string
		members map[string]member
		at      time.Duration
		release bool
		want    []string
		fresh   string
	}{
		{"taking over from a gone holder: its old claim is no contention", "b", alone, 0, false, nil, ""},
		{"its own claim seen", "a", alone, time.Second, false, nil, ""},
		{"b wrote over it, b not heard: split brain", "b", alone, 2 * time.Second, false, []string{"a", "b"}, "b"},
		{"its claim again: b still listed", "a", alone, 3 * time.Second, false, []string{"a", "b"}, ""},
		{"b again: listed, not new", "b", alone, 7 * time.Second, false, []string{"a", "b"}, ""},
		{"b heard again: it follows the rule, no contention", "b", both, 8 * time.Second, false, nil, ""},
		{"b over it while not heard: new again", "b", alone, 9 * time.Second, false, []string{"a", "b"}, "b"},
		{"b silent for contenderTTL: dropped", "a", alone, 9*time.Second + contenderTTL, false, nil, ""},
		{"released: the seen claim is forgotten", "", alone, 30 * time.Second, true, nil, ""},
		{"after release, another holder's claim is no contention", "b", alone, 31 * time.Second, false, nil, ""},
	} {
		if tc.release {
			c.forget("10.0.0.1")
			continue
		}
		got, fresh := c.observe("a", named(tc.status), tc.members, t0.Add(tc.at))
		if !slices.Equal(got, tc.want) || fresh != tc.fresh {
			t.Errorf("%s: contenders %v, new %q; want %v, %q", tc.name, got, fresh, tc.want, tc.fresh)
		}
	}
}
