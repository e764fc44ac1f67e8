package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestWaitersAndEvents(t *testing.T) {
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}}}
	old, now := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	client := fake.NewClientset(svc,
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e2", Namespace: "default"}, InvolvedObject: corev1.ObjectReference{Name: "web"}, Type: "Warning", Reason: "Later", Message: "second", LastTimestamp: now},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "default"}, InvolvedObject: corev1.ObjectReference{Name: "web"}, Type: "Normal", Reason: "Earlier", Message: "first", LastTimestamp: old},
	)
	_, err := WaitForIngress(ctx, client, "default", "web", 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no ingress yet") {
		t.Fatalf("WaitForIngress without ingress: %v", err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.252.0.1"}}
	if _, err := client.CoreV1().Services("default").UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ip, err := WaitForIngress(ctx, client, "default", "web", time.Second); err != nil || ip != "10.252.0.1" {
		t.Fatalf("WaitForIngress = %q, %v", ip, err)
	}
	err = WaitServiceDeleted(ctx, client, "default", "web", 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "load-balancer-cleanup") {
		t.Fatalf("WaitServiceDeleted with the Service there: %v", err)
	}
	if err := client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WaitServiceDeleted(ctx, client, "default", "web", time.Second); err != nil {
		t.Fatal(err)
	}

	// The fake client ignores field selectors, so only the order and the
	// format are checked here.
	if got, want := Events(ctx, client, "default", "web"), "Normal Earlier: first | Warning Later: second"; got != want {
		t.Errorf("Events = %q, want %q", got, want)
	}

	if _, err := RegisterNode(ctx, client, Node{Name: "a", Uninitialized: true}); err != nil {
		t.Fatal(err)
	}
	if err := WaitNodesInitialized(ctx, client, 300*time.Millisecond); err == nil || !strings.Contains(err.Error(), "[a]") {
		t.Fatalf("WaitNodesInitialized with a tainted node: %v", err)
	}
	n, _ := client.CoreV1().Nodes().Get(ctx, "a", metav1.GetOptions{})
	n.Spec.Taints = nil
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WaitNodesInitialized(ctx, client, time.Second); err != nil {
		t.Fatal(err)
	}
}
