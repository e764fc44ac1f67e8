package ipam

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tfccm/tfccm/config"
)

// pools parses a cloud config's address_pool blocks.
func pools(t *testing.T, hcl string) []config.AddressPool {
	t.Helper()
	c, err := config.Parse([]byte("cluster_name = \"c\"\nload_balancer {\n"+hcl+"\n}\n"), "test.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return c.LoadBalancer.AddressPools
}

// svc is a LoadBalancer Service with TCP ports and annotations (k=v pairs).
func svc(name string, ports []int32, ann ...string) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name}}}
	for _, p := range ports {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: p, Protocol: corev1.ProtocolTCP})
	}
	for i := 0; i+1 < len(ann); i += 2 {
		s.Annotations[ann[i]] = ann[i+1]
	}
	return s
}

func assign(t *testing.T, a *Allocator, s *corev1.Service, ns labels.Set) (Assignment, error) {
	t.Helper()
	req, err := RequestOf(s, true)
	if err != nil {
		t.Fatalf("request of %s: %v", s.Name, err)
	}
	return a.Assign(string(s.UID), s.Namespace+"/"+s.Name, req, ns)
}

func ips(as Assignment) string {
	s := make([]string, len(as.IPs))
	for i, ip := range as.IPs {
		s[i] = ip.String()
	}
	return strings.Join(s, ",")
}

const twoPools = `
address_pool "web" {
  addresses = ["10.0.0.0/30"]
}
address_pool "dns" {
  addresses   = ["10.0.1.10-10.0.1.11", "2001:db8::10/127"]
  auto_assign = false
}
`

func TestAssign(t *testing.T) {
	type step struct {
		svc     *corev1.Service
		want    string // addresses, or the error's text
		release string // a Service name released before this step
	}
	v6 := svc("v6", []int32{53}, "tfccm.io/address-pool", "dns")
	v6.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	dual := svc("dual", []int32{80}, "tfccm.io/address-pool", "dns")
	dual.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	require := corev1.IPFamilyPolicyRequireDualStack
	dual.Spec.IPFamilyPolicy = &require
	local1 := svc("l1", []int32{80}, "tfccm.io/allow-shared-ip", "k")
	local1.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	local2 := svc("l2", []int32{81}, "tfccm.io/allow-shared-ip", "k")
	local2.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	sameSel := svc("l3", []int32{82}, "tfccm.io/allow-shared-ip", "k")
	sameSel.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	sameSel.Spec.Selector = local1.Spec.Selector
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"first free of the auto-assigning pool", []step{
			{svc: svc("a", []int32{80}), want: "10.0.0.0"},
			{svc: svc("b", []int32{80}), want: "10.0.0.1"},
			{svc: svc("a", []int32{80, 443}), want: "10.0.0.0"}, // kept
		}},
		{"exhausted names the pool", []step{
			{svc: svc("a", nil), want: "10.0.0.0"}, {svc: svc("b", nil), want: "10.0.0.1"},
			{svc: svc("c", nil), want: "10.0.0.2"}, {svc: svc("d", nil), want: "10.0.0.3"},
			{svc: svc("e", nil), want: "address pool web has no free IPv4 address"},
			{release: "b", svc: svc("e", nil), want: "10.0.0.1"},
		}},
		{"a pool that never auto-assigns, named", []step{
			{svc: svc("a", nil, "tfccm.io/address-pool", "dns"), want: "10.0.1.10"},
			{svc: svc("b", nil, "tfccm.io/address-pool", "nope"), want: "address pool nope does not exist"},
		}},
		{"IPv6 and dual-stack", []step{
			{svc: v6, want: "2001:db8::10"},
			{svc: dual, want: "10.0.1.10,2001:db8::11"},
		}},
		{"chosen addresses", []step{
			{svc: svc("a", nil, "tfccm.io/load-balancer-ips", "10.0.0.2"), want: "10.0.0.2"},
			{svc: svc("b", nil, "tfccm.io/load-balancer-ips", "10.0.0.2"), want: "address 10.0.0.2 is held by Service default/a: it does not allow sharing"},
			{svc: svc("c", nil, "tfccm.io/load-balancer-ips", "192.0.2.1"), want: "requested address 192.0.2.1 is outside every address pool (dns: 10.0.1.10-10.0.1.11, 2001:db8::10/127; web: 10.0.0.0/30)"},
			{svc: svc("d", nil, "metallb.universe.tf/loadBalancerIPs", "10.0.1.11"), want: "10.0.1.11"}, // a non-auto pool's address may be chosen
			{svc: svc("e", nil, "tfccm.io/load-balancer-ips", "10.0.0.3", "tfccm.io/address-pool", "dns"), want: "requested address 10.0.0.3 is not in address pool dns"},
			{svc: svc("g", nil, "tfccm.io/load-balancer-ips", "2001:db8::10"), want: "requested address 2001:db8::10 is IPv6, but the Service's ipFamilies are [IPv4]"},
			{svc: svc("f", nil), want: "10.0.0.0"}, // skips the chosen ones
		}},
		{"sharing: same key, other ports", []step{
			{svc: svc("tcp", []int32{53}, "tfccm.io/allow-shared-ip", "dns"), want: "10.0.0.0"},
			{svc: svc("web", []int32{80}), want: "10.0.0.1"},
			{svc: svc("udp", []int32{5353}, "tfccm.io/allow-shared-ip", "dns"), want: "10.0.0.0"},
			{svc: svc("mlb", []int32{5354}, "metallb.io/allow-shared-ip", "dns", "tfccm.io/load-balancer-ips", "10.0.0.0"), want: "use the same annotation"},
			{svc: svc("clash", []int32{53}, "tfccm.io/allow-shared-ip", "dns", "tfccm.io/load-balancer-ips", "10.0.0.0"), want: "address 10.0.0.0 is held by Service default/tcp: port 53/TCP is used by both"},
			{svc: svc("otherkey", nil, "tfccm.io/allow-shared-ip", "x", "tfccm.io/load-balancer-ips", "10.0.0.0"), want: "its sharing key differs"},
			{svc: svc("nokey", nil, "tfccm.io/load-balancer-ips", "10.0.0.0"), want: "this Service does not allow sharing"},
			{release: "tcp", svc: svc("clash", []int32{53}, "tfccm.io/allow-shared-ip", "dns", "tfccm.io/load-balancer-ips", "10.0.0.0"), want: "10.0.0.0"},
		}},
		{"sharing with externalTrafficPolicy: Local needs the same selector", []step{
			{svc: local1, want: "10.0.0.0"},
			{svc: local2, want: "10.0.0.1"}, // another selector: not shared
			{svc: sameSel, want: "10.0.0.0"},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := New(pools(t, twoPools))
			for i, st := range tt.steps {
				if st.release != "" {
					a.Release("uid-" + st.release)
				}
				got, err := assign(t, a, st.svc, nil)
				text := ips(got)
				if err != nil {
					text = err.Error()
				}
				if !strings.Contains(text, st.want) || err == nil && text != st.want {
					t.Fatalf("step %d (%s): got %q, want %q", i, st.svc.Name, text, st.want)
				}
			}
		})
	}
}

func TestPoolSelection(t *testing.T) {
	a := New(pools(t, `
address_pool "any" {
  addresses = ["10.0.0.0/31"]
}
address_pool "team" {
  addresses           = ["10.0.1.0/31"]
  namespace_selectors = ["team=web"]
  priority            = 2
}
address_pool "prod" {
  addresses         = ["10.0.2.0/31"]
  service_selectors = ["tier in (prod)"]
  priority          = 1
}
address_pool "kube" {
  addresses  = ["10.0.3.0/31"]
  namespaces = ["kube-system"]
}
`))
	for _, tt := range []struct {
		name, ns string
		nsLabels labels.Set
		labels   map[string]string
		want     string
	}{
		{"no selector matches: the pools without selectors", "default", nil, nil, "10.0.0.0"},
		{"namespace selector", "web", labels.Set{"team": "web"}, nil, "10.0.1.0"},
		{"both match: the lower priority number first", "web", labels.Set{"team": "web"}, map[string]string{"tier": "prod"}, "10.0.2.0"},
		{"namespace by name", "kube-system", nil, nil, "10.0.3.0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := svc(tt.name, nil)
			s.Namespace, s.Labels = tt.ns, tt.labels
			got, err := assign(t, a, s, tt.nsLabels)
			if err != nil || ips(got) != tt.want {
				t.Fatalf("got %v, %v; want %s", got, err, tt.want)
			}
			a.Release(string(s.UID))
		})
	}
	// Every selected pool full: the pools without selectors are next.
	for _, n := range []string{"x1", "x2"} {
		s := svc(n, nil)
		s.Namespace = "kube-system"
		if _, err := assign(t, a, s, nil); err != nil {
			t.Fatal(err)
		}
	}
	s := svc("x3", nil)
	s.Namespace = "kube-system"
	if got, err := assign(t, a, s, nil); err != nil || ips(got) != "10.0.0.0" {
		t.Fatalf("after kube is full: %v, %v", got, err)
	}
}

func TestRestoreAndRelease(t *testing.T) {
	a := New(pools(t, twoPools))
	web, _ := RequestOf(svc("web", []int32{80}, "tfccm.io/allow-shared-ip", "k"), false)
	dns, _ := RequestOf(svc("dns", []int32{53}, "tfccm.io/allow-shared-ip", "k"), false)
	ip := netip.MustParseAddr("10.0.0.1")
	if err := a.Restore("uid-web", "default/web", web, []netip.Addr{ip}); err != nil {
		t.Fatal(err)
	}
	if err := a.Restore("uid-dns", "default/dns", dns, []netip.Addr{ip}); err != nil {
		t.Fatal(err)
	}
	other, _ := RequestOf(svc("other", nil), false)
	var conflict *ConflictError
	if err := a.Restore("uid-other", "default/other", other, []netip.Addr{ip}); !errors.As(err, &conflict) || conflict.Holder != "default/dns" {
		t.Fatalf("restore over a held address: %v", err)
	}
	// A new Service gets the first address nobody holds.
	if got, err := assign(t, a, svc("new", nil), nil); err != nil || ips(got) != "10.0.0.0" {
		t.Fatalf("new: %v, %v", got, err)
	}
	a.Release("uid-web")
	if h := a.Holder(ip); h != "default/dns" {
		t.Fatalf("after releasing web, holder = %q, want default/dns", h)
	}
	a.Release("uid-dns")
	if h := a.Holder(ip); h != "" {
		t.Fatalf("after releasing both, holder = %q", h)
	}
}

func TestRequestOf(t *testing.T) {
	legacy := svc("legacy", nil)
	legacy.Spec.LoadBalancerIP = "10.0.0.3"
	if r, err := RequestOf(legacy, false); err != nil || r.Deprecated != "spec.loadBalancerIP" || r.IPs[0].String() != "10.0.0.3" {
		t.Fatalf("spec.loadBalancerIP: %+v, %v", r, err)
	}
	// The field and an annotation that disagree name both.
	legacy.Annotations["tfccm.io/load-balancer-ip"] = "10.0.0.4"
	if _, err := RequestOf(legacy, false); err == nil || !strings.Contains(err.Error(), "annotation tfccm.io/load-balancer-ip (10.0.0.4) conflicts with spec.loadBalancerIP (10.0.0.3)") {
		t.Fatalf("spec.loadBalancerIP against the annotation: %v", err)
	}
	for _, tt := range []struct {
		name    string
		s       *corev1.Service
		metallb bool
		want    string // error text, "" = none
		ips     string
		sharing string
	}{
		{"tfccm ips", svc("a", nil, "tfccm.io/load-balancer-ips", "10.0.0.1"), false, "", "10.0.0.1", ""},
		{"two of one family", svc("a", nil, "tfccm.io/load-balancer-ips", "10.0.0.1,10.0.0.2"), false, "two addresses of one family", "", ""},
		{"metallb ignored without compat", svc("a", nil, "metallb.universe.tf/loadBalancerIPs", "10.0.0.1", "metallb.universe.tf/allow-shared-ip", "k"), false, "", "", ""},
		{"metallb read with compat", svc("a", nil, "metallb.universe.tf/loadBalancerIPs", "10.0.0.1", "metallb.io/allow-shared-ip", "k"), true, "", "10.0.0.1", "k"},
		{"sources that disagree", svc("a", nil, "tfccm.io/load-balancer-ips", "10.0.0.1", "metallb.io/loadBalancerIPs", "10.0.0.2"), true, "conflicts with annotation metallb.io/loadBalancerIPs", "", ""},
		{"keys that disagree", svc("a", nil, "tfccm.io/allow-shared-ip", "a", "metallb.universe.tf/allow-shared-ip", "b"), true, "conflicts with metallb.universe.tf/allow-shared-ip", "", ""},
		{"bad metallb value names the key", svc("a", nil, "metallb.io/loadBalancerIPs", "nope"), true, "annotation metallb.io/loadBalancerIPs", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := RequestOf(tt.s, tt.metallb)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil || join(r.IPs) != tt.ips || r.Sharing != tt.sharing {
				t.Fatalf("got %+v, %v", r, err)
			}
		})
	}
}

func TestShareToken(t *testing.T) {
	for _, tt := range []struct {
		name string
		a, b string
		same bool
	}{
		{"one key in one namespace", ShareToken("c1", "web", "dns"), ShareToken("c1", "web", "dns"), true},
		{"clusters differ", ShareToken("c1", "", "dns"), ShareToken("c2", "", "dns"), false},
		{"namespaces differ", ShareToken("c1", "team-a", "dns"), ShareToken("c1", "team-b", "dns"), false},
		{"namespaced differs from cluster-wide", ShareToken("c1", "team-a", "dns"), ShareToken("c1", "", "dns"), false},
		{"no key, no token", ShareToken("c1", "team-a", ""), "", true},
		{"a namespace cannot pose as another's key", ShareToken("c1", "a", "b\x00c"), ShareToken("c1", "a\x00b", "c"), true}, // documents the separator: names never contain NUL
	} {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.a == tt.b) != tt.same || strings.Contains(tt.a, "dns") {
				t.Fatalf("tokens %q %q, same = %v", tt.a, tt.b, tt.same)
			}
		})
	}
}

// Sharing keys and restricted pools are per namespace: a tenant who names
// another team's key, pool or address gets none of them (#44).
func TestNamespaces(t *testing.T) {
	const cfg = `
address_pool "shared" {
  addresses = ["10.0.0.0/30"]
}
address_pool "across" {
  addresses               = ["10.0.1.0/30"]
  auto_assign             = false
  share_across_namespaces = true
}
address_pool "team" {
  addresses  = ["10.0.2.0/30"]
  namespaces = ["team-c"]
}
`
	in := func(ns string, s *corev1.Service) *corev1.Service {
		s.Namespace, s.UID = ns, types.UID("uid-"+ns+"-"+s.Name)
		return s
	}
	type step struct {
		svc   *corev1.Service
		want  string // addresses, or the error's text
		scope string // the ShareScope of a success
	}
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"one key in two namespaces: two addresses", []step{
			{svc: in("team-a", svc("dns", []int32{53}, "tfccm.io/allow-shared-ip", "k")), want: "10.0.0.0", scope: "team-a"},
			{svc: in("team-b", svc("dns", []int32{54}, "tfccm.io/allow-shared-ip", "k")), want: "10.0.0.1", scope: "team-b"},
			{svc: in("team-a", svc("web", []int32{80}, "tfccm.io/allow-shared-ip", "k")), want: "10.0.0.0", scope: "team-a"}, // same namespace shares
			{svc: in("team-b", svc("steal", []int32{81}, "tfccm.io/allow-shared-ip", "k", "tfccm.io/load-balancer-ips", "10.0.0.0")),
				want: "address 10.0.0.0 is held by Service team-a/dns: it is in namespace team-a, and a tfccm.io/allow-shared-ip key shares an address only within one namespace"},
		}},
		{"a pool with share_across_namespaces", []step{
			{svc: in("team-a", svc("dns", []int32{53}, "tfccm.io/allow-shared-ip", "k", "tfccm.io/address-pool", "across")), want: "10.0.1.0", scope: ""},
			{svc: in("team-b", svc("dns", []int32{54}, "tfccm.io/allow-shared-ip", "k", "tfccm.io/address-pool", "across")), want: "10.0.1.0", scope: ""},
		}},
		{"MetalLB's annotation keeps MetalLB's cluster-wide rule", []step{
			{svc: in("team-a", svc("dns", []int32{53}, "metallb.io/allow-shared-ip", "k")), want: "10.0.0.0", scope: ""},
			{svc: in("team-b", svc("dns", []int32{54}, "metallb.universe.tf/allow-shared-ip", "k")), want: "10.0.0.0", scope: ""},
			{svc: in("team-b", svc("web", []int32{80}, "tfccm.io/allow-shared-ip", "k")), want: "10.0.0.1", scope: "team-b"},
		}},
		{"a restricted pool, named by another namespace", []step{
			{svc: in("team-b", svc("web", nil, "tfccm.io/address-pool", "team")), want: "address pool team serves only the Services its namespaces, namespace_selectors and service_selectors select, and not this one (namespace team-b)"},
			{svc: in("team-c", svc("web", nil, "tfccm.io/address-pool", "team")), want: "10.0.2.0"},
		}},
		{"a restricted pool's address, requested by another namespace", []step{
			{svc: in("team-b", svc("web", nil, "tfccm.io/load-balancer-ips", "10.0.2.1")), want: "requested address 10.0.2.1: address pool team serves only"},
			{svc: in("team-c", svc("web", nil, "tfccm.io/load-balancer-ips", "10.0.2.1")), want: "10.0.2.1"},
		}},
		{"an address held by another namespace, requested", []step{
			{svc: in("team-a", svc("web", []int32{80})), want: "10.0.0.0"},
			{svc: in("team-b", svc("web", []int32{81}, "tfccm.io/load-balancer-ips", "10.0.0.0")), want: "address 10.0.0.0 is held by Service team-a/web: it does not allow sharing"},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := New(pools(t, cfg))
			for i, st := range tt.steps {
				got, err := assign(t, a, st.svc, nil)
				text := ips(got)
				if err != nil {
					text = err.Error()
				}
				if !strings.Contains(text, st.want) || err == nil && (text != st.want || got.ShareScope != st.scope) {
					t.Fatalf("step %d (%s/%s): got %q (scope %q), want %q (scope %q)", i, st.svc.Namespace, st.svc.Name, text, got.ShareScope, st.want, st.scope)
				}
			}
		})
	}
}

// A Service that comes with an address in its status (from tfccm before
// a restart, or from MetalLB during a migration) keeps it when it is free
// and in a pool it may use.
func TestCurrentAddressKept(t *testing.T) {
	a := New(pools(t, twoPools))
	withStatus := func(name, ip string, ann ...string) *corev1.Service {
		s := svc(name, []int32{80}, ann...)
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		return s
	}
	for _, tt := range []struct {
		s    *corev1.Service
		want string
	}{
		{withStatus("moved", "10.0.0.2"), "10.0.0.2"},
		{withStatus("taken", "10.0.0.2"), "10.0.0.0"},    // held by moved: a new one
		{withStatus("outside", "192.0.2.7"), "10.0.0.1"}, // in no pool: a new one
		{withStatus("noauto", "10.0.1.10"), "10.0.0.3"},  // a pool that never auto-assigns, not named
		{withStatus("named", "10.0.1.10", "metallb.universe.tf/address-pool", "dns"), "10.0.1.10"},
	} {
		got, err := assign(t, a, tt.s, nil)
		if err != nil || ips(got) != tt.want {
			t.Errorf("%s: %v, %v; want %s", tt.s.Name, got, err, tt.want)
		}
	}
}

// families is a Service of the given families and policy ("" = none set).
func families(name string, policy corev1.IPFamilyPolicy, fams ...corev1.IPFamily) *corev1.Service {
	s := svc(name, []int32{80})
	s.Spec.IPFamilies = fams
	if policy != "" {
		s.Spec.IPFamilyPolicy = &policy
	}
	return s
}

// Pools hold one family each (or both): a dual-stack Service takes each
// family from the first pool that has it; what no pool can give is refused
// or reported exhausted, naming the family, and nothing is recorded.
func TestAssignPerFamilyPools(t *testing.T) {
	const (
		v4      = corev1.IPv4Protocol
		v6      = corev1.IPv6Protocol
		single  = corev1.IPFamilyPolicySingleStack
		prefer  = corev1.IPFamilyPolicyPreferDualStack
		require = corev1.IPFamilyPolicyRequireDualStack
	)
	const perFamily = `
address_pool "v4" {
  addresses = ["10.0.0.10-10.0.0.11"]
}
address_pool "v6" {
  addresses = ["fd00:5::10/127"]
}
`
	const v4Only = `
address_pool "v4" {
  addresses = ["10.0.0.10-10.0.0.11"]
}
`
	for _, tc := range []struct {
		name, pools string
		before      []*corev1.Service // assigned first (must succeed)
		svc         *corev1.Service
		want        string // addresses, or the error's text
	}{
		{"IPv4 single stack", perFamily, nil, families("a", single, v4), "10.0.0.10"},
		{"IPv6 single stack from the IPv6 pool", perFamily, nil, families("a", single, v6), "fd00:5::10"},
		{"dual-stack, one address from each family's pool", perFamily, nil, families("a", require, v4, v6), "10.0.0.10,fd00:5::10"},
		{"dual-stack, IPv6 primary first", perFamily, nil, families("a", prefer, v6, v4), "fd00:5::10,10.0.0.10"},
		{"chosen IPv6 address in the IPv6 pool", perFamily, nil,
			func() *corev1.Service {
				s := families("a", single, v6)
				s.Spec.LoadBalancerIP = "fd00:5::11"
				return s
			}(), "fd00:5::11"},
		{"chosen pair", perFamily, nil,
			func() *corev1.Service {
				s := families("a", require, v4, v6)
				s.Annotations["tfccm.io/load-balancer-ips"] = "10.0.0.11,fd00:5::11"
				return s
			}(), "10.0.0.11,fd00:5::11"},
		{"chosen IPv6 address outside every pool", perFamily, nil,
			func() *corev1.Service {
				s := families("a", single, v6)
				s.Annotations["tfccm.io/load-balancer-ips"] = "fd00:6::1"
				return s
			}(), "requested address fd00:6::1 is outside every address pool (v4: 10.0.0.10-10.0.0.11; v6: fd00:5::10/127)"},
		{"RequireDualStack without an IPv6 pool", v4Only, nil, families("a", require, v4, v6),
			"no address pool this Service may use has IPv6 addresses (pools: v4); the Service requires dual-stack (ipFamilyPolicy RequireDualStack): add an IPv6 address_pool, or use PreferDualStack"},
		{"PreferDualStack without an IPv6 pool: IPv4 only", v4Only, nil, families("a", prefer, v4, v6), "10.0.0.10"},
		{"IPv6 single stack without an IPv6 pool", v4Only, nil, families("a", single, v6), "no address pool this Service may use has IPv6 addresses (pools: v4)"},
		{"RequireDualStack, IPv6 pool full", perFamily,
			[]*corev1.Service{families("x", single, v6), families("y", single, v6)},
			families("a", require, v4, v6), "address pool v6 has no free IPv6 address"},
		{"PreferDualStack, IPv6 pool full: IPv4 only", perFamily,
			[]*corev1.Service{families("x", single, v6), families("y", single, v6)},
			families("a", prefer, v4, v6), "10.0.0.10"},
		{"PreferDualStack, IPv4 pool full: IPv6 only", perFamily,
			[]*corev1.Service{families("x", single, v4), families("y", single, v4)},
			families("a", prefer, v4, v6), "fd00:5::10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := New(pools(t, tc.pools))
			for _, b := range tc.before {
				if _, err := assign(t, a, b, nil); err != nil {
					t.Fatalf("assign %s: %v", b.Name, err)
				}
			}
			got, err := assign(t, a, tc.svc, nil)
			text := ips(got)
			if err != nil {
				text = err.Error()
			}
			if text != tc.want {
				t.Fatalf("got %q, want %q", text, tc.want)
			}
			if err != nil {
				for _, ip := range []string{"10.0.0.10", "10.0.0.11", "fd00:5::10", "fd00:5::11"} {
					if h := a.Holder(netip.MustParseAddr(ip)); h == "default/"+tc.svc.Name {
						t.Errorf("refused Service recorded as holder of %s", ip)
					}
				}
			}
		})
	}
}
