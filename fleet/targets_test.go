package fleet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/config"
)

// TestServedFollowsTheClassRule: the fleet plan takes the Services the CCM
// serves (config.ServesClass), not only class-less ones.
func TestServedFollowsTheClassRule(t *testing.T) {
	ours, other := "tfccm.io/terraform", "metallb.io/metallb"
	off := false
	svc := func(class *string, typ corev1.ServiceType, deleting bool) *corev1.Service {
		s := &corev1.Service{Spec: corev1.ServiceSpec{Type: typ, LoadBalancerClass: class}}
		if deleting {
			now := metav1.Now()
			s.DeletionTimestamp = &now
		}
		return s
	}
	lb := corev1.ServiceTypeLoadBalancer
	for _, tc := range []struct {
		name string
		cfg  config.Config
		svc  *corev1.Service
		want bool
	}{
		{"class-less", config.Config{LoadBalancerClass: ours}, svc(nil, lb, false), true},
		{"class-less, serve_classless off", config.Config{LoadBalancerClass: ours, ServeClassless: &off}, svc(nil, lb, false), false},
		{"tfccm's class", config.Config{LoadBalancerClass: ours, ServeClassless: &off}, svc(&ours, lb, false), true},
		{"another class", config.Config{LoadBalancerClass: ours}, svc(&other, lb, false), false},
		{"not a load balancer", config.Config{LoadBalancerClass: ours}, svc(nil, corev1.ServiceTypeNodePort, false), false},
		{"being deleted", config.Config{LoadBalancerClass: ours}, svc(nil, lb, true), false},
	} {
		if got := served(&tc.cfg, tc.svc); got != tc.want {
			t.Errorf("%s: served = %v, want %v", tc.name, got, tc.want)
		}
	}
}
