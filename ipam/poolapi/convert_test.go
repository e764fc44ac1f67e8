package poolapi

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestToConfig(t *testing.T) {
	off := false
	for _, tc := range []struct {
		name    string
		spec    AddressPoolSpec
		ranges  string // the parsed ranges, joined by " "
		problem string // a substring of the error, "" for none
	}{
		{name: "cidr and range", spec: AddressPoolSpec{Addresses: []string{"10.0.0.0/30", "2001:db8::1-2001:db8::4"}}, ranges: "10.0.0.0-10.0.0.3 2001:db8::1-2001:db8::4"},
		{name: "auto assign kept", spec: AddressPoolSpec{Addresses: []string{"10.0.0.1/32"}, AutoAssign: &off}, ranges: "10.0.0.1-10.0.0.1"},
		{name: "reversed IPv6 range", spec: AddressPoolSpec{Addresses: []string{"2001:db8::9-2001:db8::1"}}, problem: "the first not after the last"},
		{name: "host bits", spec: AddressPoolSpec{Addresses: []string{"10.0.0.1/24"}}, problem: "host bits set"},
		{name: "selector that does not parse", spec: AddressPoolSpec{Addresses: []string{"10.0.0.0/30"}, NamespaceSelectors: []string{"team in (web"}}, problem: `selector "team in (web"`},
		{name: "segment", spec: AddressPoolSpec{Addresses: []string{"10.0.20.16/28"}, Network: &Network{Interface: "vlan20", Hosts: []string{"lb-a"}, Subnet: "10.0.20.0/24"}}, ranges: "10.0.20.16-10.0.20.31"},
		{name: "address outside its segment", spec: AddressPoolSpec{Addresses: []string{"10.0.30.16/28"}, Network: &Network{Subnet: "10.0.20.0/24"}}, problem: "10.0.30.16-10.0.30.31 is outside its segment (network subnet 10.0.20.0/24"},
		{name: "segment's broadcast address", spec: AddressPoolSpec{Addresses: []string{"10.0.20.250-10.0.20.255"}, Network: &Network{Subnet: "10.0.20.0/24"}}, problem: "is outside its segment"},
		{name: "IPv6 address outside subnet6", spec: AddressPoolSpec{Addresses: []string{"fd00:30::10-fd00:30::20"}, Network: &Network{Subnet6: "fd00:20::/64"}}, problem: "network subnet6 fd00:20::/64"},
		{name: "subnet of the wrong family", spec: AddressPoolSpec{Addresses: []string{"10.0.20.16/28"}, Network: &Network{Subnet: "fd00:20::/64"}}, problem: `subnet "fd00:20::/64" is not an IPv4 CIDR`},
		{name: "node selector that does not parse", spec: AddressPoolSpec{Addresses: []string{"10.0.0.0/30"}, Network: &Network{NodeSelector: "zone in (a"}}, problem: `nodeSelector "zone in (a"`},
		{name: "ranges of one pool overlap", spec: AddressPoolSpec{Addresses: []string{"10.0.0.0/30", "10.0.0.2-10.0.0.9"}}, problem: "overlaps 10.0.0.0-10.0.0.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &AddressPool{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: tc.spec}
			c, err := p.ToConfig()
			if tc.problem != "" {
				var inv *InvalidError
				if !errors.As(err, &inv) || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("err = %v, want an InvalidError naming %q", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range c.Ranges {
				got = append(got, r.First.String()+"-"+r.Last.String())
			}
			if (c.Network != nil) != (tc.spec.Network != nil) || c.Network != nil && (c.Network.Interface != tc.spec.Network.Interface || c.Network.Prefix.String() != tc.spec.Network.Subnet) {
				t.Errorf("network %+v, want %+v", c.Network, tc.spec.Network)
			}
			if strings.Join(got, " ") != tc.ranges || c.Name != "web" || c.AutoAssign == nil || (tc.spec.AutoAssign != nil) && *c.AutoAssign != *tc.spec.AutoAssign {
				t.Errorf("pool %q ranges %v auto-assign %v, want ranges %s", c.Name, got, c.AutoAssign, tc.ranges)
			}
		})
	}
}

func TestFromUnstructured(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Group + "/" + Version, "kind": Kind,
		"metadata": map[string]any{"name": "web"},
		"spec":     map[string]any{"addresses": []any{"10.0.0.0/30"}, "priority": int64(3), "network": map[string]any{"interface": "vlan20"}},
	}}
	p, err := FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "web" || p.Spec.Priority != 3 || p.Spec.Addresses[0] != "10.0.0.0/30" || p.Spec.Network.Interface != "vlan20" {
		t.Errorf("decoded %+v", p)
	}
	cp := p.DeepCopy()
	cp.Spec.Addresses[0] = "changed"
	cp.Spec.Network.Interface = "changed"
	if p.Spec.Addresses[0] != "10.0.0.0/30" || p.Spec.Network.Interface != "vlan20" {
		t.Error("DeepCopy shares the spec's slices or network with the original")
	}
}
