package bgp

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/lbhost/frr"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

func goodSpec() vipapi.NodeBGPSpec {
	return vipapi.NodeBGPSpec{ASN: 64513,
		Peers: []vipapi.BGPPeer{
			{Name: "tor-a", Address: "10.77.0.1", ASN: 64512, KeepaliveTime: 1, HoldTime: 3, BFDProfile: "fast", PasswordSecret: &vipapi.SecretKeyRef{Name: "bgp", Key: "password"}, NodeSelector: map[string]string{"rack": "a"}},
			{Name: "tor-b", Address: "10.78.0.1", ASN: 64512, NodeSelector: map[string]string{"rack": "b"}},
		},
		BFDProfiles: []vipapi.BFDProfile{{Name: "fast", ReceiveInterval: 100, TransmitInterval: 100, DetectMultiplier: 3}},
		Pools:       []vipapi.BGPPool{{Name: "default", Prefixes: []string{"198.51.100.0/24"}, Communities: []string{"64513:100"}}},
	}
}

// TestConfig: a node gets the peers its labels select, with the
// password read from the Secret; bad input names the field and never the
// password.
func TestConfig(t *testing.T) {
	pw := func(vipapi.SecretKeyRef) (string, error) { return "s3cret", nil }
	n := Node{Labels: map[string]string{"rack": "a"}, RouterID: netip.MustParseAddr("10.77.0.2"), Networks: []netip.Prefix{netip.MustParsePrefix("10.77.0.0/24")}}
	c, err := Config(goodSpec(), n, pw)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Peers) != 1 || c.Peers[0].Name != "tor-a" || c.Peers[0].Password != "s3cret" {
		t.Fatalf("peers %+v", c.Peers)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*vipapi.NodeBGPSpec)
		node  Node
		field string
	}{
		{"peer outside every node network", func(s *vipapi.NodeBGPSpec) { s.Peers[0].Address = "10.99.0.1" }, n, "peers[0].address"},
		{"ASN clash", func(s *vipapi.NodeBGPSpec) { s.Peers[0].ASN = 64513 }, n, "peers[0].asn"},
		{"invalid community", func(s *vipapi.NodeBGPSpec) { s.Pools[0].Communities = []string{"70000:1"} }, n, "pools[0].communities[0]"},
		{"reserved ASN", func(s *vipapi.NodeBGPSpec) { s.ASN = 23456 }, n, "asn"},
		{"unknown BFD profile", func(s *vipapi.NodeBGPSpec) { s.Peers[0].BFDProfile = "slow" }, n, "peers[0].bfd_profile"},
		{"bad prefix", func(s *vipapi.NodeBGPSpec) { s.Pools[0].Prefixes = []string{"198.51.100.1"} }, n, "pools[0].prefixes[0]"},
		{"bad password", func(s *vipapi.NodeBGPSpec) {}, n, "peers[0].password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := goodSpec()
			tc.edit(&s)
			get := pw
			if tc.field == "peers[0].password" {
				get = func(vipapi.SecretKeyRef) (string, error) { return "has space", nil }
			}
			_, err := Config(s, tc.node, get)
			var fe *frr.Error
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("%v, want an error naming %s", err, tc.field)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "has space") {
				t.Fatalf("the password is in the error: %v", err)
			}
		})
	}
	// At plan time (no node): the rest is checked without a router ID.
	if _, err := Config(goodSpec(), Node{Labels: map[string]string{"rack": "a"}}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestRouterID: the first IPv4 InternalIP; an IPv6-only node's low 32
// bits; none without an address that gives a non-zero one.
func TestRouterID(t *testing.T) {
	for _, tc := range []struct {
		internal []string
		want     string
	}{
		{[]string{"10.0.0.5"}, "10.0.0.5"},
		{[]string{"fd00:10::5", "10.0.0.5"}, "10.0.0.5"},
		{[]string{"::ffff:10.0.0.7"}, "10.0.0.7"},
		{[]string{"fd00:10::a"}, "0.0.0.10"},
		{[]string{"2001:db8::c0a8:102"}, "192.168.1.2"},
		{[]string{"fd00:10::"}, "invalid IP"},
		{nil, "invalid IP"},
	} {
		var in []netip.Addr
		for _, s := range tc.internal {
			in = append(in, netip.MustParseAddr(s))
		}
		if got := RouterID(in).String(); got != tc.want {
			t.Errorf("RouterID(%v) = %s, want %s", tc.internal, got, tc.want)
		}
	}
}
