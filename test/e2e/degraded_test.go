package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestDegradedFromHAProxy: the local set's HAProxy reports its servers'
// health and the Service shows it. Both nodes healthy: tfccm.io/Degraded
// False and tfccm_load_balancer_backends_up 2 of 2. node-b's health
// endpoint (kube-proxy's :10256 in its netns) stops: Degraded True naming
// node-b alone, 1 of 2 up. It serves again: False. The Service deleted:
// its series are gone.
func TestDegradedFromHAProxy(t *testing.T) { testDegraded(t, nil) }

// TestDegradedFromL4: the same through the local set's l4 variant, whose
// health module reads the backends lbhost-router's nftables rules forward
// to (the nodes passing its own health checks).
func TestDegradedFromL4(t *testing.T) {
	testDegraded(t, map[string]string{"tfccm.io/template": "l4"})
}

func testDegraded(t *testing.T, annotations map[string]string) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	settings := harness.Block("load_balancer", cloud.LBSettings())
	settings = strings.Replace(settings, "load_balancer {\n", "load_balancer {\n  health_interval = \"1s\"\n", 1)
	cfg, _ := writeCloudConfig(t, t.TempDir(), settings)
	healthz := map[string]func(){}
	for _, n := range []string{"node-a", "node-b"} {
		stop, err := cloud.ServeHTTP(n, 30080, n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		if healthz[n], err = cloud.ServeHealthz(n, 0); err != nil {
			t.Fatal(err)
		}
		createNode(t, client, cloud, n)
	}
	t.Cleanup(func() {
		for _, stop := range healthz {
			stop()
		}
	})
	ccm := startCCM(t, cluster, cfg)

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "health", Namespace: "default", Annotations: annotations},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitVIP(t, client, "health")

	degraded := func(status metav1.ConditionStatus, reason, message string) {
		t.Helper()
		eventually(t, time.Minute, fmt.Sprintf("Degraded=%s %s %q", status, reason, message), func(context.Context) error {
			svc, c := conditionOf(t, client, "health", "tfccm.io/Degraded")
			if c == nil || c.Status != status || c.Reason != reason || c.Message != message {
				return fmt.Errorf("condition %+v", c)
			}
			if c.ObservedGeneration != svc.Generation {
				return fmt.Errorf("observedGeneration %d, generation %d", c.ObservedGeneration, svc.Generation)
			}
			return nil
		})
	}
	gauges := func(up, total int) {
		t.Helper()
		want := []string{
			fmt.Sprintf(`tfccm_load_balancer_backends_up{service_name="health",service_namespace="default"} %d`, up),
			fmt.Sprintf(`tfccm_load_balancer_backends{service_name="health",service_namespace="default"} %d`, total),
		}
		eventually(t, 30*time.Second, strings.Join(want, ", "), func(context.Context) error {
			body := ccmMetrics(t, cluster, ccm)
			for _, w := range want {
				if !strings.Contains(body, w+"\n") {
					return fmt.Errorf("/metrics lacks %s", w)
				}
			}
			return nil
		})
	}

	degraded(metav1.ConditionFalse, "BackendsHealthy", "all 2 backends are healthy")
	gauges(2, 2)

	start := time.Now()
	healthz["node-b"]()
	delete(healthz, "node-b")
	degraded(metav1.ConditionTrue, "BackendsUnhealthy", "unhealthy: node-b (1 of 2 backends up)")
	gauges(1, 2)
	t.Logf("node-b reported unhealthy %s after it stopped", time.Since(start).Round(time.Second))

	stop, err := cloud.ServeHealthz("node-b", 0)
	if err != nil {
		t.Fatal(err)
	}
	healthz["node-b"] = stop
	degraded(metav1.ConditionFalse, "BackendsHealthy", "all 2 backends are healthy")
	gauges(2, 2)

	if err := client.CoreV1().Services("default").Delete(ctx, "health", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServiceDeleted(t, client, "health", time.Minute)
	eventually(t, 30*time.Second, "the deleted Service's series dropped", func(context.Context) error {
		if body := ccmMetrics(t, cluster, ccm); strings.Contains(body, `service_name="health"`) && strings.Contains(body, "tfccm_load_balancer_backends") {
			return fmt.Errorf("/metrics still has the deleted Service's backends series")
		}
		return nil
	})
}
