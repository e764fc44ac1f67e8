package agent

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/tfccm/tfccm/lbhost/frr"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

func bgpVIP(v *vipapi.NodeVIP) *vipapi.NodeVIP {
	v.Spec.Announce = vipapi.AnnounceBGP
	return v
}

// TestDecideBGP: in BGP mode every eligible node announces (no single
// holder): Cluster every healthy node, Local those with a ready endpoint;
// a cordoned, not ready or agent-less node does not.
func TestDecideBGP(t *testing.T) {
	yes := true
	onB := "b"
	w := view{
		nodes: map[string]*corev1.Node{"a": testNode("a", true, false), "b": testNode("b", true, false), "c": testNode("c", true, true), "d": testNode("d", false, false), "e": testNode("e", true, false)},
		members: map[string]member{
			"a": {Name: "a", meta: meta{Eligible: true}}, "b": {Name: "b", meta: meta{Eligible: true}},
			"c": {Name: "c", meta: meta{Eligible: true}}, "d": {Name: "d", meta: meta{Eligible: true}},
			"e": {Name: "e", meta: meta{Why: "kubelet does not answer"}},
		},
		slices: func(ns, name string) []*discoveryv1.EndpointSlice {
			if name != "local" {
				return nil
			}
			return []*discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{{NodeName: &onB, Conditions: discoveryv1.EndpointConditions{Ready: &yes}}}}}
		},
	}
	for _, tc := range []struct {
		name       string
		vips       []*vipapi.NodeVIP
		candidates []string
		reason     string
	}{
		{"cluster: every healthy node announces", []*vipapi.NodeVIP{bgpVIP(testVIP("web", "198.51.100.1", "Cluster", "a", "b", "c", "d", "e"))}, []string{"a", "b"}, ""},
		{"local: only the node with a ready endpoint", []*vipapi.NodeVIP{bgpVIP(testVIP("local", "198.51.100.2", "Local", "a", "b"))}, []string{"b"}, ""},
		{"local without an endpoint: nobody, NoLocalEndpoint", []*vipapi.NodeVIP{bgpVIP(testVIP("idle", "198.51.100.3", "Local", "a", "b"))}, nil, vipapi.ReasonNoLocalEndpoint},
		{"no healthy node", []*vipapi.NodeVIP{bgpVIP(testVIP("web", "198.51.100.4", "Cluster", "c", "d", "e"))}, nil, vipapi.ReasonNoEligibleNode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := decideBGP(tc.vips, w)
			if len(ds) != 1 {
				t.Fatalf("%d decisions", len(ds))
			}
			d := ds[0]
			if !slices.Equal(d.Candidates, tc.candidates) || d.WhyReason != tc.reason {
				t.Errorf("announcers %v (%s), want %v (%s)", d.Candidates, d.WhyReason, tc.candidates, tc.reason)
			}
		})
	}
}

// TestSplitBGP: only announce bgp goes the BGP way; l2 and "" stay.
func TestSplitBGP(t *testing.T) {
	l2 := testVIP("a", "10.0.0.1", "Cluster", "a")
	explicit := testVIP("b", "10.0.0.2", "Cluster", "a")
	explicit.Spec.Announce = vipapi.AnnounceL2
	b := bgpVIP(testVIP("c", "10.0.0.3", "Cluster", "a"))
	gotL2, gotBGP := splitBGP([]*vipapi.NodeVIP{l2, explicit, b})
	if len(gotL2) != 2 || len(gotBGP) != 1 || gotBGP[0] != b {
		t.Fatalf("l2 %v, bgp %v", gotL2, gotBGP)
	}
}

// TestInPools drops addresses outside every pool.
func TestInPools(t *testing.T) {
	pools := []frr.Pool{{Name: "p", Prefixes: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}}}
	got := inPools([]netip.Addr{netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("203.0.113.1")}, pools)
	if len(got) != 1 || got[0].String() != "198.51.100.7" {
		t.Fatal(got)
	}
}

// TestPasswordCache: a Secret's key is read once per passwordTTL; a
// missing key is an error that names no value.
func TestPasswordCache(t *testing.T) {
	reads := 0
	s := bgpState{secrets: func(_ context.Context, name string) (*corev1.Secret, error) {
		reads++
		return &corev1.Secret{Data: map[string][]byte{"pw": []byte("s3cret\n")}}, nil
	}}
	ref := vipapi.SecretKeyRef{Name: "bgp", Key: "pw"}
	t0 := time.Now()
	for _, at := range []time.Time{t0, t0.Add(time.Second), t0.Add(passwordTTL + time.Second)} {
		got, err := s.password(context.Background(), ref, at)
		if err != nil || got != "s3cret" {
			t.Fatalf("%q, %v", got, err)
		}
	}
	if reads != 2 {
		t.Fatalf("%d reads, want 2 (one per TTL)", reads)
	}
	if _, err := s.password(context.Background(), vipapi.SecretKeyRef{Name: "bgp", Key: "other"}, t0); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("missing key: %v", err)
	}
}
