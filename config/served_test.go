package config

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestServes: tfccm serves LoadBalancer Services of its class, and
// class-less ones unless serve_classless is false; nothing else.
func TestServes(t *testing.T) {
	ours, other := DefaultLoadBalancerClass, "example.com/other"
	off := false
	for _, tt := range []struct {
		name      string
		typ       corev1.ServiceType
		class     *string
		classless *bool
		want      bool
	}{
		{"class-less LoadBalancer", corev1.ServiceTypeLoadBalancer, nil, nil, true},
		{"class-less with serve_classless off", corev1.ServiceTypeLoadBalancer, nil, &off, false},
		{"tfccm's class", corev1.ServiceTypeLoadBalancer, &ours, &off, true},
		{"another class", corev1.ServiceTypeLoadBalancer, &other, nil, false},
		{"not a LoadBalancer", corev1.ServiceTypeNodePort, &ours, nil, false},
		{"ClusterIP class-less", corev1.ServiceTypeClusterIP, nil, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &Config{LoadBalancerClass: DefaultLoadBalancerClass, ServeClassless: tt.classless}
			svc := &corev1.Service{Spec: corev1.ServiceSpec{Type: tt.typ, LoadBalancerClass: tt.class}}
			if got := c.Serves(svc); got != tt.want {
				t.Fatalf("Serves = %v, want %v", got, tt.want)
			}
		})
	}
}
