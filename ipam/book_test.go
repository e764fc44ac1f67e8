package ipam

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tfccm/tfccm/config"
)

// bookConfig is a cloud config with one auto-assigning pool of four
// addresses.
func bookConfig(t *testing.T) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte("cluster_name = \"c\"\nload_balancer {\n  address_pool \"auto\" {\n    addresses = [\"10.0.0.16/30\"]\n  }\n}\n"), "test.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// applied is s with status ingress ip, as after the controller's apply.
func applied(s *corev1.Service, ip string) *corev1.Service {
	s = s.DeepCopy()
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	s.Status.Conditions = []metav1.Condition{{Type: "tfccm.io/Programmed", Status: metav1.ConditionTrue}}
	return s
}

// TestOfflineBookMatchesLive: the book the CLI builds from the live
// Services (or one Service's own status) gives each Service the addresses
// the controller's book gave it: pooled, shared (same token), chosen.
func TestOfflineBookMatchesLive(t *testing.T) {
	cfg := bookConfig(t)
	web := svc("web", []int32{80}, "tfccm.io/allow-shared-ip", "front")
	api := svc("api", []int32{8080}, "tfccm.io/allow-shared-ip", "front")
	solo := svc("solo", []int32{80})
	chosen := svc("chosen", []int32{80}, "tfccm.io/load-balancer-ips", "10.0.0.19")
	live := NewBook(cfg)
	want := map[string]Addresses{}
	for _, s := range []*corev1.Service{web, api, solo, chosen} {
		a, _, err := live.Assign(s)
		if err != nil {
			t.Fatalf("assign %s: %v", s.Name, err)
		}
		want[s.Name] = a
	}
	if want["web"].Shared == "" || want["web"].Shared != want["api"].Shared || join(want["web"].IPs) != join(want["api"].IPs) {
		t.Fatalf("web %+v and api %+v do not share", want["web"], want["api"])
	}
	var status []*corev1.Service
	for _, s := range []*corev1.Service{web, api, solo, chosen} {
		status = append(status, applied(s, join(want[s.Name].IPs)))
	}
	for _, tt := range []struct {
		name string
		live func(s *corev1.Service) []*corev1.Service
	}{
		{"from the cluster's Services", func(*corev1.Service) []*corev1.Service { return status }},
		{"from the Service's own status", func(s *corev1.Service) []*corev1.Service { return []*corev1.Service{s} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range status {
				got, err := Offline(cfg, tt.live(s), nil).Decide(s)
				if err != nil || join(got.IPs) != join(want[s.Name].IPs) || got.Shared != want[s.Name].Shared {
					t.Errorf("%s: %+v, %v; want %+v", s.Name, got, err, want[s.Name])
				}
			}
		})
	}
}

// TestBookFor: For is what Assign decided, else the Service's chosen
// addresses unshared; a request that does not read is an error.
func TestBookFor(t *testing.T) {
	cfg, err := config.Parse([]byte("cluster_name = \"c\"\n"), "test.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, ips, err string
		s              *corev1.Service
	}{
		{"nothing chosen", "", "", svc("a", []int32{80})},
		{"chosen", "192.0.2.7", "", svc("a", []int32{80}, "tfccm.io/load-balancer-ips", "192.0.2.7")},
		{"unreadable", "", "not an IPv4 or IPv6 address", func() *corev1.Service {
			s := svc("a", []int32{80})
			s.Spec.LoadBalancerIP = "nope"
			return s
		}()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewBook(cfg).For(tt.s)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("For = %+v, %v; want error %q", got, err, tt.err)
				}
				return
			}
			if err != nil || join(got.IPs) != tt.ips || got.Shared != "" {
				t.Fatalf("For = %+v, %v; want %s unshared", got, err, tt.ips)
			}
		})
	}
}

// TestBookSegments: an address of a pool with a network block renders
// with that segment (pool, interface, hosts, subnet); one of a pool
// without is on the default segment (no segments at all).
func TestBookSegments(t *testing.T) {
	cfg, err := config.Parse([]byte(`cluster_name = "c"
load_balancer {
  address_pool "lan" {
    addresses = ["10.0.5.16/30"]
  }
  address_pool "vlan20" {
    addresses   = ["10.0.20.16/30"]
    auto_assign = false
    network {
      interface = "vlan20"
      hosts     = ["lb-b"]
      subnet    = "10.0.20.0/24"
    }
  }
}
`), "test.hcl")
	if err != nil {
		t.Fatal(err)
	}
	b := NewBook(cfg)
	lan, _, err := b.Assign(svc("a", []int32{80}))
	if err != nil || join(lan.IPs) != "10.0.5.16" || lan.Segments != nil {
		t.Fatalf("default pool: %+v, %v; want 10.0.5.16 on the default segment", lan, err)
	}
	got, _, err := b.Assign(svc("b", []int32{80}, "tfccm.io/address-pool", "vlan20"))
	if err != nil || join(got.IPs) != "10.0.20.16" || len(got.Segments) != 1 || got.Segments[0] == nil {
		t.Fatalf("VLAN pool: %+v, %v; want 10.0.20.16 with its segment", got, err)
	}
	if s := got.Segments[0]; s.Pool != "vlan20" || s.Network.Name() != "interface vlan20, subnet 10.0.20.0/24, hosts lb-b" {
		t.Errorf("segment %s of pool %s", s.Network.Name(), s.Pool)
	}
}

// TestShareTokensPerNamespace: the token an LB host checks is the same for
// Services of one namespace with one tfccm.io/allow-shared-ip key, and
// differs between namespaces (so no host lets a tenant attach to another
// namespace's address by guessing its key), unless the key is MetalLB's
// (compat) or the pool shares across namespaces; those keep the
// cluster-wide token of before.
func TestShareTokensPerNamespace(t *testing.T) {
	cfg, err := config.Parse([]byte(`cluster_name = "c1"
compat {
  metallb = true
}
load_balancer {
  address_pool "web" {
    addresses = ["10.0.0.10-10.0.0.11"]
  }
  address_pool "across" {
    addresses               = ["10.0.1.10-10.0.1.11"]
    auto_assign             = false
    share_across_namespaces = true
  }
}
`), "test.hcl")
	if err != nil {
		t.Fatal(err)
	}
	b := NewBook(cfg)
	in := func(ns string, s *corev1.Service) *corev1.Service {
		s.Namespace, s.UID = ns, types.UID("uid-"+ns+"-"+s.Name)
		return s
	}
	token := func(s *corev1.Service) string {
		t.Helper()
		a, _, err := b.Assign(s)
		if err != nil {
			t.Fatalf("%s/%s: %v", s.Namespace, s.Name, err)
		}
		return a.Shared
	}
	addrs := func(s *corev1.Service) []netip.Addr {
		t.Helper()
		a, err := b.For(s)
		if err != nil || len(a.IPs) == 0 {
			t.Fatalf("%s/%s: %+v, %v", s.Namespace, s.Name, a, err)
		}
		return a.IPs
	}
	a1 := token(in("a", svc("dns", []int32{53}, "tfccm.io/allow-shared-ip", "k")))
	a2 := token(in("a", svc("web", []int32{80}, "tfccm.io/allow-shared-ip", "k")))
	b1 := token(in("b", svc("dns", []int32{53}, "tfccm.io/allow-shared-ip", "k")))
	if a1 != a2 || a1 == b1 || a1 == "" || b1 == "" {
		t.Fatalf("tokens a/dns %q a/web %q b/dns %q: want one per namespace", a1, a2, b1)
	}
	if ipA, ipB := addrs(in("a", svc("dns", []int32{53}))), addrs(in("b", svc("dns", []int32{53}))); ipA[0] == ipB[0] {
		t.Fatalf("one key in two namespaces got one address %s", ipA[0])
	}
	m1 := token(in("a", svc("m1", []int32{53}, "metallb.universe.tf/allow-shared-ip", "m", "metallb.universe.tf/address-pool", "across")))
	m2 := token(in("b", svc("m2", []int32{54}, "metallb.io/allow-shared-ip", "m", "metallb.universe.tf/address-pool", "across")))
	x1 := token(in("a", svc("x1", []int32{55}, "tfccm.io/allow-shared-ip", "x", "tfccm.io/address-pool", "across")))
	x2 := token(in("b", svc("x2", []int32{56}, "tfccm.io/allow-shared-ip", "x", "tfccm.io/address-pool", "across")))
	if m1 != m2 || x1 != x2 || m1 == x1 {
		t.Fatalf("cluster-wide tokens: metallb %q %q, across %q %q", m1, m2, x1, x2)
	}
}

// TestRestoreKeepsTheOlderSharer: two namespaces' Services that shared an
// address by one tfccm.io/allow-shared-ip key before keys became per
// namespace: after a restart the older keeps the address, in whichever
// order the Services are listed, and the younger is given another.
func TestRestoreKeepsTheOlderSharer(t *testing.T) {
	cfg := bookConfig(t)
	for _, reversed := range []bool{false, true} {
		older := svc("dns", []int32{53}, "tfccm.io/allow-shared-ip", "k")
		older.Namespace, older.UID, older.CreationTimestamp = "team-a", "uid-older", metav1.Unix(100, 0)
		younger := svc("dns", []int32{54}, "tfccm.io/allow-shared-ip", "k")
		younger.Namespace, younger.UID, younger.CreationTimestamp = "team-b", "uid-younger", metav1.Unix(200, 0)
		for _, s := range []*corev1.Service{older, younger} {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.16"}}
		}
		listed := []*corev1.Service{older, younger}
		if reversed {
			listed = []*corev1.Service{younger, older}
		}
		b := NewBook(cfg)
		b.Live = func() ([]*corev1.Service, error) { return listed, nil }
		got := map[*corev1.Service]Addresses{}
		for _, s := range []*corev1.Service{younger, older} {
			a, _, err := b.Assign(s)
			if err != nil {
				t.Fatalf("%s: %v", s.Namespace, err)
			}
			got[s] = a
		}
		if o, y := got[older].IPs[0].String(), got[younger].IPs[0].String(); o != "10.0.0.16" || y == o {
			t.Fatalf("reversed=%v: older %s, younger %s; want the older to keep 10.0.0.16", reversed, o, y)
		}
	}
}
