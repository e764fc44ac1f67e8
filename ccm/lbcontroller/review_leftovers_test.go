package lbcontroller

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tfccm/tfccm/annotations"
)

// TestLeftovers: the plan ConfigMaps an earlier version published in
// Services' namespaces are found (to be named in the log); tfccm's own
// plans and other ConfigMaps are not.
func TestLeftovers(t *testing.T) {
	labels := map[string]string{annotations.ManagedBy: "tfccm", annotations.PlanServiceUID: "u"}
	cm := func(ns, name string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	}
	client := fake.NewClientset(
		cm("shop", "tfccm-plan-lb-a", labels),
		cm("tfccm", "tfccm-plan-lb-b", labels),
		cm("shop", "tfccm-plan-lb-c", nil),
		cm("blog", "other", labels),
	)
	got, err := leftovers(t.Context(), client, "tfccm")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"shop/tfccm-plan-lb-a"}; !slices.Equal(got, want) {
		t.Errorf("leftovers %v, want %v", got, want)
	}
}
