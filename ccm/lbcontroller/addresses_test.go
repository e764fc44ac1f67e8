package lbcontroller

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/ipam"
	"github.com/tfccm/tfccm/templates"
)

func addressConfig(t *testing.T, extra string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(`cluster_name = "c1"
load_balancer {
  address_pool "web" {
    addresses = ["10.0.0.10-10.0.0.11"]
  }
}
`+extra), "test.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func addrService(name string, port int32, ann ...string) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: port, Protocol: corev1.ProtocolTCP}}}}
	for i := 0; i+1 < len(ann); i += 2 {
		s.Annotations[ann[i]] = ann[i+1]
	}
	return s
}

func TestAddressBook(t *testing.T) {
	b := newAddressBook(addressConfig(t, "compat {\n  metallb = true\n}\n"))
	// Restored from status: a restarted tfccm keeps what Services have.
	held := addrService("held", 80)
	held.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.10"}}
	// Served by tfccm before the restart (its conditions say so): kept
	// without an Event.
	ours := addrService("ours", 80)
	ours.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.11"}}
	ours.Status.Conditions = []metav1.Condition{{Type: ConditionProgrammed, Status: metav1.ConditionTrue, Reason: CondReasonApplied}}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, s := range []*corev1.Service{held, ours} {
		if err := idx.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	b.services = corelisters.NewServiceLister(idx)

	if n, err := b.assign(ours); err != nil || len(n) != 0 {
		t.Fatalf("ours: %v, %v; want no notice (tfccm served it before)", n, err)
	}
	b.release(ours)

	dns := addrService("dns", 53, "metallb.universe.tf/allow-shared-ip", "dns")
	notices, err := b.assign(dns)
	if err != nil || len(notices) != 1 || notices[0].reason != ReasonAddressAssigned || !strings.Contains(notices[0].message, "10.0.0.11 from pool web") {
		t.Fatalf("dns: %v, %v", notices, err)
	}
	if got := look(t, b, dns); got == nil || got.IPs[0].String() != "10.0.0.11" || got.Shared == "" {
		t.Fatalf("lookup(dns) = %+v", got)
	}
	if n, err := b.assign(dns); err != nil || len(n) != 0 {
		t.Fatalf("unchanged assignment: notices %v, %v; want none", n, err)
	}
	// The address restored from the status of a Service tfccm did not
	// serve (MetalLB's, migrated) is kept, and its first assignment says
	// so once.
	if n, err := b.assign(held); err != nil || len(n) != 1 || n[0].reason != ReasonAddressAssigned || n[0].message != "address 10.0.0.10 from pool web, kept from the Service's status" {
		t.Fatalf("held: %v, %v; want one notice of the kept address", n, err)
	}
	if n, err := b.assign(held); err != nil || len(n) != 0 {
		t.Fatalf("held again: %v, %v; want none", n, err)
	}
	udp := addrService("dns-udp", 5353, "metallb.io/allow-shared-ip", "dns")
	if n, err := b.assign(udp); err != nil || !strings.Contains(n[0].message, "shared with default/dns") {
		t.Fatalf("dns-udp: %v, %v", n, err)
	}
	if look(t, b, udp).Shared != look(t, b, dns).Shared {
		t.Fatalf("sharers' tokens differ: %q, %q", look(t, b, udp).Shared, look(t, b, dns).Shared)
	}

	for _, tt := range []struct {
		svc    *corev1.Service
		reason string
		text   string
	}{
		{addrService("thief", 80, "tfccm.io/load-balancer-ips", "10.0.0.10"), ReasonAddressConflict, "held by Service default/held"},
		{addrService("more", 80), ReasonAddressPoolExhausted, "address pool web has no free IPv4 address"},
		{addrService("outside", 80, "tfccm.io/load-balancer-ips", "192.0.2.1"), ReasonAddressRefused, "outside every address pool"},
	} {
		_, err := b.assign(tt.svc)
		var ae *addressError
		if !errors.As(err, &ae) || ae.reason != tt.reason || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("%s: %v, want %s %q", tt.svc.Name, err, tt.reason, tt.text)
		}
	}

	// spec.loadBalancerIP: honoured, with a Normal Event saying so.
	b.release(held)
	legacy := addrService("legacy", 80)
	legacy.Spec.LoadBalancerIP = "10.0.0.10"
	n, err := b.assign(legacy)
	if err != nil || len(n) != 2 || n[0].reason != ReasonLoadBalancerIPDeprecated {
		t.Fatalf("legacy: %v, %v", n, err)
	}

	// Without pools the template allocates; sharing needs the address
	// chosen, and chosen addresses are checked against their holders.
	none := newAddressBook(addressConfigNoPools(t))
	if _, err := none.assign(addrService("s", 80, "tfccm.io/allow-shared-ip", "k")); err == nil || !strings.Contains(err.Error(), "needs address pools") {
		t.Fatalf("sharing without pools or a chosen address: %v", err)
	}
	if n, err := none.assign(addrService("plain", 80)); err != nil || n != nil || look(t, none, addrService("plain", 80)) != nil {
		t.Fatalf("without pools: %v, %v", n, err)
	}
	a := addrService("a", 80, "tfccm.io/allow-shared-ip", "k", "tfccm.io/load-balancer-ips", "203.0.113.5")
	if n, err := none.assign(a); err != nil || !strings.Contains(n[0].message, "203.0.113.5 (chosen)") || look(t, none, a).Shared == "" {
		t.Fatalf("chosen shared address without pools: %v, %v", n, err)
	}
	if _, err := none.assign(addrService("b", 80, "tfccm.io/allow-shared-ip", "k", "tfccm.io/load-balancer-ips", "203.0.113.5")); err == nil || !strings.Contains(err.Error(), "port 80/TCP") {
		t.Fatalf("a port clash without pools: %v", err)
	}
}

func addressConfigNoPools(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(`cluster_name = "c1"`), "test.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Address pools per family: a dual-stack Service gets one address of each
// family (each from its family's pool) and one Event naming both pools; a
// family no pool has is refused when the Service requires it, and left out
// when it only prefers it.
func TestAddressBookFamilies(t *testing.T) {
	v6pool := `
  address_pool "web6" {
    addresses = ["fd00:5::10/127"]
  }
`
	withFamilies := func(name string, policy corev1.IPFamilyPolicy, fams ...corev1.IPFamily) *corev1.Service {
		s := addrService(name, 80)
		s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = fams, &policy
		return s
	}
	const v4, v6 = corev1.IPv4Protocol, corev1.IPv6Protocol
	for _, tt := range []struct {
		name   string
		extra  string // more address_pool blocks
		svc    *corev1.Service
		ips    string // the addresses the renderer gets, or
		reason string // the refusal's Event reason
		text   string // in the Event message
	}{
		{"dual-stack from two pools", v6pool, withFamilies("d", corev1.IPFamilyPolicyRequireDualStack, v4, v6), "10.0.0.10,fd00:5::10", "", "address 10.0.0.10,fd00:5::10 from pool web, web6"},
		{"IPv6 primary", v6pool, withFamilies("d", corev1.IPFamilyPolicyPreferDualStack, v6, v4), "fd00:5::10,10.0.0.10", "", "from pool web6, web"},
		{"IPv6 only", v6pool, withFamilies("d", corev1.IPFamilyPolicySingleStack, v6), "fd00:5::10", "", "address fd00:5::10 from pool web6"},
		{"chosen IPv6 address", v6pool, func() *corev1.Service {
			s := withFamilies("d", corev1.IPFamilyPolicySingleStack, v6)
			s.Annotations["tfccm.io/load-balancer-ips"] = "fd00:5::11"
			return s
		}(), "fd00:5::11", "", "address fd00:5::11 from pool web6"},
		{"PreferDualStack without an IPv6 pool", "", withFamilies("d", corev1.IPFamilyPolicyPreferDualStack, v4, v6), "10.0.0.10", "", "address 10.0.0.10 from pool web"},
		{"RequireDualStack without an IPv6 pool", "", withFamilies("d", corev1.IPFamilyPolicyRequireDualStack, v4, v6), "", ReasonAddressRefused,
			"no address pool this Service may use has IPv6 addresses (pools: web); the Service requires dual-stack"},
		{"an IPv6 address for an IPv4 Service", v6pool, func() *corev1.Service {
			s := withFamilies("d", corev1.IPFamilyPolicySingleStack, v4)
			s.Annotations["tfccm.io/load-balancer-ips"] = "fd00:5::11"
			return s
		}(), "", ReasonAddressRefused, "requested address fd00:5::11 is IPv6, but the Service's ipFamilies are [IPv4]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte("cluster_name = \"c1\"\nload_balancer {\n  address_pool \"web\" {\n    addresses = [\"10.0.0.10-10.0.0.11\"]\n  }\n"+tt.extra+"}\n"), "test.hcl")
			if err != nil {
				t.Fatal(err)
			}
			b := newAddressBook(cfg)
			notices, err := b.assign(tt.svc)
			if tt.reason != "" {
				var ae *addressError
				if !errors.As(err, &ae) || ae.reason != tt.reason || !strings.Contains(err.Error(), tt.text) {
					t.Fatalf("assign = %v, want %s %q", err, tt.reason, tt.text)
				}
				// Nothing was decided: the renderer would get only what the
				// Service asked for, shared with no one.
				req, _ := ipam.RequestOf(tt.svc, false)
				if got := look(t, b, tt.svc); got != nil && (got.Shared != "" || joinAddrs(got.IPs) != joinAddrs(req.IPs)) {
					t.Fatalf("a refused Service has addresses decided for it: %+v", got)
				}
				return
			}
			if err != nil || len(notices) != 1 || !strings.Contains(notices[0].message, tt.text) {
				t.Fatalf("assign = %v, %v; want one Event with %q", notices, err, tt.text)
			}
			if got := look(t, b, tt.svc); got == nil || joinAddrs(got.IPs) != tt.ips {
				t.Fatalf("lookup = %+v, want %s", got, tt.ips)
			}
		})
	}
}

// look is the addresses the renderer gets for svc, nil when they are none
// (the template allocates).
func look(t *testing.T, b *addressBook, svc *corev1.Service) *templates.Addresses {
	t.Helper()
	a, err := b.lookup(svc)
	if err != nil {
		t.Fatalf("lookup %s: %v", svc.Name, err)
	}
	if len(a.IPs) == 0 && a.Shared == "" {
		return nil
	}
	return &a
}
