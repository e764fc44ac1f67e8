package metallb

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pool(name string, lbls map[string]string, addrs ...string) IPAddressPool {
	return IPAddressPool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "metallb-system", Labels: lbls}, Spec: IPAddressPoolSpec{Addresses: addrs}}
}

func l2(name string, spec AdvertisementSpec) Advertisement {
	return Advertisement{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "metallb-system"}, Spec: spec}
}

func TestConvert(t *testing.T) {
	sel := func(k, v string) []metav1.LabelSelector {
		return []metav1.LabelSelector{{MatchLabels: map[string]string{k: v}}}
	}
	for _, tc := range []struct {
		name      string
		objs      Objects
		iface     string // of pool "p"; "-" for no network
		nodeSel   string
		noteParts []string // substrings of the notes, in order
	}{
		{name: "named by an L2Advertisement", objs: Objects{Pools: []IPAddressPool{pool("p", nil, "10.0.0.0/28")}, L2: []Advertisement{l2("a", AdvertisementSpec{IPAddressPools: []string{"p"}, Interfaces: []string{"vlan20"}, NodeSelectors: sel("zone", "a")})}},
			iface: "vlan20", nodeSel: "zone=a"},
		{name: "selected by labels", objs: Objects{Pools: []IPAddressPool{pool("p", map[string]string{"seg": "x"}, "10.0.0.0/28")}, L2: []Advertisement{l2("a", AdvertisementSpec{IPAddressPoolSelectors: sel("seg", "x"), Interfaces: []string{"eth1"}})}},
			iface: "eth1"},
		{name: "an advertisement of another pool", objs: Objects{Pools: []IPAddressPool{pool("p", nil, "10.0.0.0/28")}, L2: []Advertisement{l2("a", AdvertisementSpec{IPAddressPools: []string{"q"}, Interfaces: []string{"eth1"}})}},
			iface: "-", noteParts: []string{"no L2Advertisement or BGPAdvertisement announces it"}},
		{name: "every pool, every interface", objs: Objects{Pools: []IPAddressPool{pool("p", nil, "10.0.0.0/28")}, L2: []Advertisement{l2("a", AdvertisementSpec{})}}, iface: "-"},
		{name: "two node selectors", objs: Objects{Pools: []IPAddressPool{pool("p", nil, "10.0.0.0/28")}, L2: []Advertisement{l2("a", AdvertisementSpec{NodeSelectors: append(sel("zone", "a"), sel("zone", "b")...)})}},
			iface: "-", noteParts: []string{`several selectors ("zone=a", "zone=b")`}},
		{name: "BGP", objs: Objects{Pools: []IPAddressPool{pool("p", nil, "10.0.0.0/28")}, BGP: []Advertisement{l2("b", AdvertisementSpec{})}},
			iface: "-", noteParts: []string{"announced by BGPAdvertisement b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, notes := Convert(tc.objs)
			if len(got) != 1 || got[0].Name != "p" || got[0].Namespace != "metallb-system" || got[0].Annotations[SourceAnnotation] != "metallb-system/p" {
				t.Fatalf("pools %+v", got)
			}
			n := got[0].Spec.Network
			switch {
			case tc.iface == "-" && n != nil:
				t.Errorf("network %+v, want none", n)
			case tc.iface != "-" && (n == nil || n.Interface != tc.iface || n.NodeSelector != tc.nodeSel):
				t.Errorf("network %+v, want interface %s node selector %q", n, tc.iface, tc.nodeSel)
			}
			if len(notes) != len(tc.noteParts) {
				t.Fatalf("notes %v, want %v", notes, tc.noteParts)
			}
			for i, part := range tc.noteParts {
				if !strings.Contains(notes[i].Message, part) {
					t.Errorf("note %q lacks %q", notes[i], part)
				}
			}
			if c := Clean(got[0]); c.Namespace != "" || !c.CreationTimestamp.IsZero() || c.Annotations[SourceAnnotation] == "" {
				t.Errorf("Clean kept MetalLB's metadata: %+v", c.ObjectMeta)
			}
		})
	}
}
