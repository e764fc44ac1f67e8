package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestSharedAndChosenAddresses runs the local set with two address pools
// inside the cloud's VIP pool and MetalLB compatibility on: two Services
// share one VIP (by MetalLB's annotation, both its spellings: with compat
// keys are MetalLB's, cluster-wide; tfccm's own is per namespace, see
// TestSharedIPsPerNamespace), each with its
// own frontend; a Service clashing on a port is refused with an Event naming
// the holder and gets nothing; chosen addresses come from a pool that never
// auto-assigns; deleting one sharer keeps the other served; and a restarted
// CCM never gives a held address to a newcomer, and keeps a migrated
// Service's address with one LoadBalancerIPAssigned saying so.
func TestSharedAndChosenAddresses(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	pool := netip.MustParsePrefix(cloud.VIPPool).Addr().As4()
	at := func(last byte) string { a := pool; a[3] = last; return netip.AddrFrom4(a).String() }
	blocks := fmt.Sprintf(`load_balancer {
  settings = %s
  address_pool "auto" {
    addresses = [%q]
  }
  address_pool "reserved" {
    addresses   = ["%s-%s"]
    auto_assign = false
  }
}
compat {
  metallb = true
}
`, harness.HCLObject(cloud.LBSettings()), at(16)+"/30", at(40), at(41))
	cfg, _ := writeCloudConfig(t, t.TempDir(), blocks)
	serveNodes(t, cloud, 30080, 30081)
	createNode(t, client, cloud, "node-a")
	ccm := startCCM(t, cluster, cfg, "--concurrent-service-syncs=3")

	mk := func(name string, port, nodePort int32, ann map[string]string) {
		t.Helper()
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: ann},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
				Ports: []corev1.ServicePort{{Port: port, NodePort: nodePort, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
		}
		if strings.HasPrefix(name, "legacy") {
			svc.Spec.LoadBalancerIP = at(41)
		}
		if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("web", 80, 30080, map[string]string{"metallb.io/allow-shared-ip": "front"})
	mk("api", 8080, 30081, map[string]string{"metallb.universe.tf/allow-shared-ip": "front"})
	mk("chosen", 80, 0, map[string]string{"tfccm.io/load-balancer-ips": at(40)})
	mk("legacy", 80, 0, nil)

	vip := waitVIP(t, client, "web")
	if got := waitVIP(t, client, "api"); got != vip {
		t.Fatalf("api got %s, web %s: want one shared VIP", got, vip)
	}
	if vip != at(16) {
		t.Errorf("shared VIP %s, want the auto pool's first address %s", vip, at(16))
	}
	if got := waitVIP(t, client, "chosen"); got != at(40) {
		t.Errorf("chosen got %s, want %s", got, at(40))
	}
	if got := waitVIP(t, client, "legacy"); got != at(41) {
		t.Errorf("legacy got %s, want %s", got, at(41))
	}
	backendsAre(t, vip, 80, "node-a")
	backendsAre(t, vip, 8080, "node-a")
	waitEvent(t, client, "legacy", "LoadBalancerIPDeprecated")
	// Whichever of the two is assigned second says so.
	eventually(t, time.Minute, "a LoadBalancerIPAssigned Event saying web and api share", func(ctx context.Context) error {
		web, api := harness.Events(ctx, client, "default", "web"), harness.Events(ctx, client, "default", "api")
		if !strings.Contains(web, "shared with default/api") && !strings.Contains(api, "shared with default/web") {
			return fmt.Errorf("web: %s; api: %s", web, api)
		}
		return nil
	})

	t.Run("a clash is an Event on the newcomer and nothing is applied", func(t *testing.T) {
		mk("clash", 80, 0, map[string]string{"metallb.io/allow-shared-ip": "front", "tfccm.io/load-balancer-ips": vip})
		waitEvent(t, client, "clash", "LoadBalancerIPConflict", "held by Service default/web", "port 80/TCP")
		mk("outside", 80, 0, map[string]string{"tfccm.io/load-balancer-ips": at(200)})
		waitEvent(t, client, "outside", "LoadBalancerIPRefused", "outside every address pool")
		for _, name := range []string{"clash", "outside"} {
			s, err := client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(s.Status.LoadBalancer.Ingress) > 0 {
				t.Errorf("%s: status %v (%v), want none", name, s.Status.LoadBalancer.Ingress, err)
			}
		}
		backendsAre(t, vip, 80, "node-a")
	})

	t.Run("deleting one sharer keeps the other served", func(t *testing.T) {
		if err := client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitServiceDeleted(t, client, "web", 2*time.Minute)
		backendsAre(t, vip, 8080, "node-a")
		if _, err := get(vip, 80); err == nil {
			t.Errorf("%s:80 still answers after its Service was deleted", vip)
		}
	})

	t.Run("a restarted CCM keeps held addresses", func(t *testing.T) {
		ccm.Stop()
		// A Service another implementation gave an address of the pool
		// (its status, no tfccm condition) while no CCM ran: a migration.
		mk("migrated", 9090, 0, nil)
		migrated, err := client.CoreV1().Services("default").Get(ctx, "migrated", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		migrated.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: at(17)}}
		if _, err := client.CoreV1().Services("default").UpdateStatus(ctx, migrated, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		startCCM(t, cluster, cfg, "--concurrent-service-syncs=3")
		mk("newcomer", 80, 30080, nil)
		if got := waitVIP(t, client, "newcomer"); got == vip || got == at(17) || got == at(40) || got == at(41) {
			t.Fatalf("newcomer got the held address %s", got)
		}
		backendsAre(t, vip, 8080, "node-a")
		// The migrated Service keeps its address and is told so once;
		// those tfccm served before the restart are not.
		waitEvent(t, client, "migrated", "LoadBalancerIPAssigned", "address "+at(17)+" from pool auto, kept from the Service's status")
		if got := waitVIP(t, client, "migrated"); got != at(17) {
			t.Errorf("migrated got %s, want the %s it had", got, at(17))
		}
		for _, name := range []string{"api", "chosen", "legacy"} {
			if ev := harness.Events(ctx, client, "default", name); strings.Contains(ev, "kept from the Service's status") {
				t.Errorf("%s, served before the restart: %s", name, ev)
			}
		}
	})
}

// waitEvent waits for an Event on Service name whose text has every want.
func waitEvent(t *testing.T, client kubernetes.Interface, name string, want ...string) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("Event on %s with %q", name, want), func(ctx context.Context) error {
		ev := harness.Events(ctx, client, "default", name)
		for _, line := range strings.Split(ev, " | ") {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(line, w)
			}
			if ok {
				return nil
			}
		}
		return fmt.Errorf("events: %s", ev)
	})
}
