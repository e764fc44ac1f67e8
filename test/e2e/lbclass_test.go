package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestLoadBalancerClass: the CCM binary serves a Service of tfccm's load
// balancer class through its class loop (VIP, backends, its own finalizer,
// tfccm.io/Programmed), leaves a Service of another class alone, warns
// about the never-real class annotation, and moves a class-less Service to
// its class (type NodePort, then LoadBalancer with the class): the service
// controller releases the workspace, the class loop applies it again.
func TestLoadBalancerClass(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	cfg, _ := writeCloudConfig(t, t.TempDir(), harness.Block("load_balancer", cloud.LBSettings()))
	serveNodes(t, cloud, 30090, 30091)
	createNode(t, client, cloud, "node-a")
	createNode(t, client, cloud, "node-b")
	startCCM(t, cluster, cfg)

	mine, other := config.DefaultLoadBalancerClass, "example.com/other"
	create := func(name string, class *string, nodePort int32, annotations map[string]string) {
		t.Helper()
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: annotations},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: class,
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: nodePort, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
		}
		if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("classed", &mine, 30090, nil)
	create("other", &other, 0, nil)
	create("plain", nil, 30091, map[string]string{"service.kubernetes.io/load-balancer-class": mine})

	vip := waitVIP(t, client, "classed")
	backendsAre(t, vip, 80, "node-a", "node-b")
	waitFinalizers(t, client, "classed", annotations.ClassFinalizer)
	waitProgrammed(t, client, "classed")
	plainVIP := waitVIP(t, client, "plain")
	backendsAre(t, plainVIP, 80, "node-a", "node-b")
	waitFinalizers(t, client, "plain", "service.kubernetes.io/load-balancer-cleanup")
	eventually(t, 30*time.Second, "the class annotation's Warning", func(ctx context.Context) error {
		for _, w := range serviceWarnings(ctx, t, client, "plain") {
			if strings.Contains(w, "TerraformClassAnnotationIgnored") && strings.Contains(w, "spec.loadBalancerClass") {
				return nil
			}
		}
		return fmt.Errorf("no TerraformClassAnnotationIgnored Warning on plain")
	})
	if s, err := client.CoreV1().Services("default").Get(ctx, "other", metav1.GetOptions{}); err != nil ||
		len(s.Finalizers) != 0 || len(s.Status.LoadBalancer.Ingress) != 0 || len(s.Status.Conditions) != 0 {
		t.Errorf("a Service of another class was touched: %+v, %v", s, err)
	}

	// Class-less -> tfccm's class: the same workspace changes hands.
	start := time.Now()
	for _, change := range []func(*corev1.Service){
		func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort },
		func(s *corev1.Service) { s.Spec.Type, s.Spec.LoadBalancerClass = corev1.ServiceTypeLoadBalancer, &mine },
	} {
		eventually(t, 30*time.Second, "update plain", func(ctx context.Context) error {
			s, err := client.CoreV1().Services("default").Get(ctx, "plain", metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(s)
			_, err = client.CoreV1().Services("default").Update(ctx, s, metav1.UpdateOptions{})
			return err
		})
	}
	waitFinalizers(t, client, "plain", annotations.ClassFinalizer)
	plainVIP = waitVIP(t, client, "plain")
	backendsAre(t, plainVIP, 80, "node-a", "node-b")
	waitProgrammed(t, client, "plain")
	t.Logf("class-less -> %s: served again at %s after %s", mine, plainVIP, time.Since(start).Round(time.Millisecond))
	// Waiting for the previous owner is no failure: the only Warning is
	// the class annotation's.
	for _, name := range []string{"classed", "plain"} {
		for _, w := range serviceWarnings(ctx, t, client, name) {
			if !strings.HasPrefix(w, "TerraformClassAnnotationIgnored: ") {
				t.Errorf("Warning on %s: %s", name, w)
			}
		}
	}

	for _, name := range []string{"classed", "plain", "other"} {
		if err := client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"classed", "plain", "other"} {
		waitServiceDeleted(t, client, name, 2*time.Minute)
	}
	if _, err := get(vip, 80); err == nil {
		t.Errorf("%s still answers after its Service was deleted", vip)
	}
}

// waitFinalizers waits until the Service's finalizers are exactly want.
func waitFinalizers(t *testing.T, client kubernetes.Interface, name string, want ...string) {
	t.Helper()
	eventually(t, time.Minute, name+"'s finalizers "+strings.Join(want, ","), func(ctx context.Context) error {
		s, err := client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !slices.Equal(s.Finalizers, want) {
			return fmt.Errorf("finalizers %v", s.Finalizers)
		}
		return nil
	})
}

// waitProgrammed waits for tfccm.io/Programmed=True on the Service's
// current generation.
func waitProgrammed(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	eventually(t, time.Minute, name+" tfccm.io/Programmed", func(context.Context) error {
		svc, cond := conditionOf(t, client, name, "tfccm.io/Programmed")
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != svc.Generation {
			return fmt.Errorf("condition %+v at generation %d", cond, svc.Generation)
		}
		return nil
	})
}

// serviceWarnings lists "Reason: message" of the Warnings on a Service.
func serviceWarnings(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) []string {
	t.Helper()
	events, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",type=Warning"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range events.Items {
		if !ipRepair(e) {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}
