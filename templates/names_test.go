package templates

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tfccm/tfccm/config"
)

func TestIsLoadBalancerWorkspace(t *testing.T) {
	for _, cluster := range []string{"demo", "a-very-long-cluster-name-that-gets-cut-somewhere"} {
		cfg := &config.Config{ClusterName: cluster}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{UID: types.UID("0f7e-uid")}}
		name := LoadBalancerWorkspaceName(cfg, svc)
		if !IsLoadBalancerWorkspace(cfg, name) {
			t.Errorf("%s: %s not recognised", cluster, name)
		}
		for _, other := range []string{RoutesWorkspaceName, name + "0", name[:len(name)-1] + "z", LoadBalancerWorkspaceName(&config.Config{ClusterName: "other"}, svc)} {
			if IsLoadBalancerWorkspace(cfg, other) {
				t.Errorf("%s: %s recognised as a load balancer workspace", cluster, other)
			}
		}
	}
}

// TestLoadBalancerID: the id templates key a load balancer's objects on LB
// hosts by comes from the Service UID only: two Services with one
// tfccm.io/name in two namespaces get two ids, a rename keeps the id, and
// without a name the id is the name (the owners of earlier releases).
func TestLoadBalancerID(t *testing.T) {
	cfg := &config.Config{ClusterName: "demo"}
	svc := func(ns, uid, name string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", UID: types.UID(uid), Annotations: map[string]string{}}}
		if name != "" {
			s.Annotations["tfccm.io/name"] = name
		}
		return s
	}
	a, b := svc("team-a", "uid-a", "shop"), svc("team-b", "uid-b", "shop")
	renamed := svc("team-a", "uid-a", "shop-2")
	plain := svc("team-a", "uid-a", "")
	for _, tt := range []struct {
		name       string
		got, other string
		same       bool
	}{
		{"one name, two Services: two ids", LoadBalancerID(cfg, a), LoadBalancerID(cfg, b), false},
		{"one name, two Services: one name", LoadBalancerName(cfg, a), LoadBalancerName(cfg, b), true},
		{"a rename keeps the id", LoadBalancerID(cfg, a), LoadBalancerID(cfg, renamed), true},
		{"without a name the id is the name", LoadBalancerID(cfg, plain), LoadBalancerName(cfg, plain), true},
		{"the id is the workspace's default name", "lb-" + LoadBalancerID(cfg, a), LoadBalancerWorkspaceName(cfg, a), true},
	} {
		if (tt.got == tt.other) != tt.same {
			t.Errorf("%s: %q vs %q", tt.name, tt.got, tt.other)
		}
	}
}
