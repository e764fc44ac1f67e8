package harness

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/internal/testkit"
)

// Interval is how often the waiters check their condition.
const Interval = 250 * time.Millisecond

// Eventually checks cond at once and then every Interval until it returns
// nil or timeout passes (or ctx ends); then it returns an error naming
// what was awaited, the timeout and cond's last error (testkit.Poll).
func Eventually(ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) error) error {
	return testkit.Poll(ctx, Interval, timeout, what, cond)
}

// WaitForIngress waits until the Service has a load-balancer ingress IP
// and returns the first one. While it waits, the error it would give
// carries the Service's Events.
func WaitForIngress(ctx context.Context, client kubernetes.Interface, namespace, name string, timeout time.Duration) (string, error) {
	var ip string
	err := Eventually(ctx, timeout, "Service "+namespace+"/"+name+" gets an ingress IP", func(ctx context.Context) error {
		s, err := client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(s.Status.LoadBalancer.Ingress) == 0 || s.Status.LoadBalancer.Ingress[0].IP == "" {
			return fmt.Errorf("no ingress yet; events: %s", Events(ctx, client, namespace, name))
		}
		ip = s.Status.LoadBalancer.Ingress[0].IP
		return nil
	})
	return ip, err
}

// WaitServiceDeleted waits until the Service is gone, i.e. its
// load-balancer finalizer is released.
func WaitServiceDeleted(ctx context.Context, client kubernetes.Interface, namespace, name string, timeout time.Duration) error {
	return Eventually(ctx, timeout, "Service "+namespace+"/"+name+" deleted", func(ctx context.Context) error {
		s, err := client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still there with finalizers %v; events: %s", s.Finalizers, Events(ctx, client, namespace, name))
	})
}

// WaitNodesInitialized waits until the CCM's node controller has
// initialized every Node (none has UninitializedTaint any more).
func WaitNodesInitialized(ctx context.Context, client kubernetes.Interface, timeout time.Duration) error {
	return Eventually(ctx, timeout, "Nodes initialized from Terraform state", func(ctx context.Context) error {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var pending []string
		for _, n := range nodes.Items {
			for _, t := range n.Spec.Taints {
				if t.Key == UninitializedTaint {
					pending = append(pending, n.Name)
				}
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("still tainted %s: %v", UninitializedTaint, pending)
		}
		return nil
	})
}
