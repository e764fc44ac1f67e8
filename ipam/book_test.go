package ipam

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
