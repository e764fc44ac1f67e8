package ipam

import (
	"maps"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/ipam/poolapi"
)

func poolObject(name string, age int, addrs ...string) *poolapi.AddressPool {
	return &poolapi.AddressPool{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(1000-int64(age), 0))},
		Spec:       poolapi.AddressPoolSpec{Addresses: addrs},
	}
}

// metallbPool is p as read from MetalLB's IPAddressPool (compat).
func metallbPool(p *poolapi.AddressPool) *poolapi.AddressPool {
	p.Namespace = "metallb-system"
	return p
}

func generation(p *poolapi.AddressPool, g int64) *poolapi.AddressPool {
	p.Generation = g
	return p
}

func hclPool(t *testing.T, name string, addrs ...string) config.AddressPool {
	p := config.AddressPool{Name: name, Addresses: addrs}
	if problems := config.FinishPool(&p); len(problems) > 0 {
		t.Fatal(problems)
	}
	return p
}

// lbHostsConfig is a cloud config with two LB hosts in its settings.
func lbHostsConfig(t *testing.T) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(`cluster_name = "c"
load_balancer {
  settings = {
    hosts = {
      lb-a = { address = "10.0.9.2", address6 = "fd00:9::2" }
      lb-b = { address = "10.0.9.3" }
    }
  }
}
`), "test.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLBHostAddresses(t *testing.T) {
	got := LBHostAddresses(lbHostsConfig(t))
	want := map[string]string{"10.0.9.2": "the address 10.0.9.2 of LB host lb-a", "fd00:9::2": "the address fd00:9::2 of LB host lb-a", "10.0.9.3": "the address 10.0.9.3 of LB host lb-b"}
	if len(got) != len(want) {
		t.Errorf("reserved %v, want %v", got, want)
	}
	for a, w := range want {
		if got[netip.MustParseAddr(a)] != w {
			t.Errorf("%s: %q, want %q", a, got[netip.MustParseAddr(a)], w)
		}
	}
	if r := LBHostAddresses(bookConfig(t)); len(r) != 0 {
		t.Errorf("a config without hosts reserves %v", r)
	}
}

func TestMerge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hcl     []string // name=cidr
		objects []*poolapi.AddressPool
		last    map[string]*poolapi.AddressPool
		pools   string   // the merged pools' names
		refused []string // "pool:Type:substring of the message"
	}{
		{name: "objects beside blocks", hcl: []string{"blocks=10.0.0.0/28"}, objects: []*poolapi.AddressPool{poolObject("web", 1, "10.0.1.0/28")}, pools: "blocks web"},
		{name: "name clash: the block wins", hcl: []string{"web=10.0.0.0/28"}, objects: []*poolapi.AddressPool{poolObject("web", 1, "10.0.1.0/28")}, pools: "web", refused: []string{`web:Invalid:declares an address_pool "web"`}},
		{name: "overlap with a block", hcl: []string{"blocks=10.0.0.0/28"}, objects: []*poolapi.AddressPool{poolObject("web", 1, "10.0.0.8-10.0.0.20")}, pools: "blocks", refused: []string{`web:Overlaps:of the cloud config's address_pool "blocks"`}},
		{name: "overlap between objects: the older keeps it", objects: []*poolapi.AddressPool{poolObject("new", 1, "10.0.0.0/24"), poolObject("old", 5, "10.0.0.128/25")}, pools: "old", refused: []string{`new:Overlaps:of AddressPool "old"`}},
		{name: "invalid selector", objects: []*poolapi.AddressPool{{ObjectMeta: metav1.ObjectMeta{Name: "sel"}, Spec: poolapi.AddressPoolSpec{Addresses: []string{"10.0.0.0/30"}, ServiceSelectors: []string{"a in (b"}}}}, refused: []string{`sel:Invalid:selector "a in (b"`}},
		{name: "an invalid pool does not block a later good one", objects: []*poolapi.AddressPool{poolObject("bad", 5, "10.0.0.1/24"), poolObject("good", 1, "10.0.0.0/24")}, pools: "good", refused: []string{"bad:Invalid:host bits"}},
		{name: "a pool covering a node's address", objects: []*poolapi.AddressPool{poolObject("nodes", 1, "10.0.7.0/24"), poolObject("hostname-only", 1, "10.0.8.0/24")}, pools: "hostname-only", refused: []string{`nodes:Invalid:covers the address 10.0.7.5 of node node-a`}},
		{name: "MetalLB's pools after tfccm's, older or not", objects: []*poolapi.AddressPool{metallbPool(poolObject("web", 9, "10.0.2.0/28")), poolObject("web", 1, "10.0.1.0/28"), metallbPool(poolObject("old", 9, "10.0.1.8/29")), metallbPool(poolObject("lan", 2, "10.0.3.0/28"))},
			pools: "web lan", refused: []string{`web:Invalid:AddressPool "web" is used, this MetalLB IPAddressPool of the same name is not`, `old:Overlaps:of AddressPool "web"`}},
		{name: "a pool covering an LB host's address", objects: []*poolapi.AddressPool{poolObject("lbnet", 1, "10.0.9.0/28"), poolObject("later", 1, "10.0.9.64/28")}, pools: "later", refused: []string{`lbnet:Invalid:covers the address 10.0.9.2 of LB host lb-a`}},
		{name: "a refused edit keeps the last valid spec", objects: []*poolapi.AddressPool{poolObject("old", 5, "10.0.0.0/25"), generation(poolObject("web", 1, "10.0.0.0/24"), 2)},
			last: map[string]*poolapi.AddressPool{"web": generation(poolObject("web", 1, "10.0.1.0/24"), 1)}, pools: "old web", refused: []string{`web:Overlaps:last valid spec (generation 1) keeps serving`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hcl []config.AddressPool
			for _, s := range tc.hcl {
				name, cidr, _ := strings.Cut(s, "=")
				hcl = append(hcl, hclPool(t, name, cidr))
			}
			reserved := NodeAddresses([]*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.7.5"}, {Type: corev1.NodeHostName, Address: "10.0.8.5"}}}}})
			maps.Copy(reserved, LBHostAddresses(lbHostsConfig(t)))
			pools, verdicts := Merge(hcl, tc.objects, tc.last, reserved)
			var names []string
			for _, p := range pools {
				names = append(names, p.Name)
			}
			if strings.Join(names, " ") != tc.pools {
				t.Errorf("pools %v, want %s", names, tc.pools)
			}
			var refused []string
			for _, v := range verdicts {
				if !v.Serves() {
					refused = append(refused, v.Pool)
				}
			}
			if len(refused) != len(tc.refused) {
				t.Errorf("refused %v, want %v (verdicts %+v)", refused, tc.refused, verdicts)
			}
			for _, want := range tc.refused {
				parts := strings.SplitN(want, ":", 3)
				found := false
				for _, v := range verdicts {
					found = found || v.Pool == parts[0] && v.Type == parts[1] && strings.Contains(v.Message, parts[2])
				}
				if !found {
					t.Errorf("no verdict %s in %+v", want, verdicts)
				}
			}
		})
	}
}

// TestSetObjectPools: an object pool serves the next allocation, a grown
// range serves without a new book, the usage counts, and a Service keeps
// its address when an edit of its pool is refused.
func TestSetObjectPools(t *testing.T) {
	b := NewBook(&config.Config{ClusterName: "c", LoadBalancer: &config.LoadBalancer{}, Compat: &config.Compat{}})
	b.Restore(nil)
	svc := func(name string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	}
	if v := b.SetObjectPools([]*poolapi.AddressPool{poolObject("web", 1, "10.0.0.1-10.0.0.1")}); len(v) != 1 || !v[0].Serves() {
		t.Fatalf("verdicts %+v", v)
	}
	got, _, err := b.Assign(svc("a"))
	if err != nil || len(got.IPs) != 1 || got.IPs[0].String() != "10.0.0.1" {
		t.Fatalf("a: %v %v", got, err)
	}
	if _, _, err := b.Assign(svc("b")); err == nil {
		t.Fatal("b got an address from a full pool")
	}
	b.SetObjectPools([]*poolapi.AddressPool{poolObject("web", 1, "10.0.0.1-10.0.0.2")})
	got, _, err = b.Assign(svc("b"))
	if err != nil || got.IPs[0].String() != "10.0.0.2" {
		t.Fatalf("b after the range grew: %v %v", got, err)
	}
	v4, v6, ok := b.Usage("web")
	if !ok || v4.Total.Int64() != 2 || v4.InUse != 2 || v4.Free().Int64() != 0 || v6.Total.Sign() != 0 {
		t.Errorf("usage v4 %+v v6 %+v %v", v4, v6, ok)
	}
	bad := generation(poolObject("web", 1, "10.0.0.1-10.0.0.2"), 3)
	bad.Spec.ServiceSelectors = []string{"app in (x"}
	if v := b.SetObjectPools([]*poolapi.AddressPool{bad}); v[0].Type != poolapi.ConditionInvalid || v[0].Serving == nil {
		t.Errorf("a bad edit: verdict %+v, want Invalid with the last valid spec serving", v[0])
	}
	got, _, err = b.Assign(svc("a"))
	if err != nil || len(got.IPs) != 1 || got.IPs[0].String() != "10.0.0.1" {
		t.Errorf("a after a bad edit of its pool: %v %v, want it kept", got, err)
	}
}
