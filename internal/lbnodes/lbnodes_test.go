package lbnodes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	servicecontroller "k8s.io/cloud-provider/controllers/service"
)

func TestTaintIsTheServiceControllers(t *testing.T) {
	if ToBeDeletedTaint != servicecontroller.ToBeDeletedTaint {
		t.Fatalf("ToBeDeletedTaint %q, the service controller's %q", ToBeDeletedTaint, servicecontroller.ToBeDeletedTaint)
	}
}

func TestEligible(t *testing.T) {
	now := metav1.Now()
	node := func(mut func(*corev1.Node)) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{}}}
		mut(n)
		return n
	}
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"plain", node(func(*corev1.Node) {}), true},
		{"being deleted", node(func(n *corev1.Node) { n.DeletionTimestamp = &now }), false},
		{"excluded", node(func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "true" }), false},
		{"exclusion false", node(func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "false" }), true},
		{"exclusion unreadable", node(func(n *corev1.Node) { n.Labels[corev1.LabelNodeExcludeBalancers] = "maybe" }), false},
		{"autoscaler taint", node(func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: ToBeDeletedTaint, Effect: corev1.TaintEffectNoSchedule}}
		}), false},
		{"other taint", node(func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
		}), true},
	} {
		if got := Eligible(tc.node); got != tc.want {
			t.Errorf("%s: Eligible = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFilterKeepsOrder(t *testing.T) {
	a := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	b := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{corev1.LabelNodeExcludeBalancers: "true"}}}
	c := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	got := Filter([]*corev1.Node{c, b, a})
	if len(got) != 2 || got[0] != c || got[1] != a {
		t.Fatalf("Filter = %v, want [c a]", got)
	}
}
