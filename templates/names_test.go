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
