package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestDualStackLoadBalancer runs the local set on a dual-stack control
// plane with an IPv4 and an IPv6 address pool: a RequireDualStack Service
// gets one address from each pool, both in its status and both served by
// HAProxy; an IPv6-only Service gets the IPv6 address it chose; a Service
// that requires dual-stack but may only use the IPv4 pool is refused with
// an Event naming the missing family, and nothing is applied for it.
func TestDualStackLoadBalancer(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTestWith(t, devcluster.Options{ServiceCIDRs: "10.0.0.0/24,fd00:10:96::/112"})
	client := cluster.Client()
	ctx := context.Background()
	v4 := netip.MustParsePrefix(cloud.VIPPool).Addr().As4()
	v4[3] = 16
	v6 := netip.MustParsePrefix(cloud.VIPPool6).Addr().As16()
	v6[15] = 0x10
	pool4, pool6 := netip.PrefixFrom(netip.AddrFrom4(v4), 30), netip.PrefixFrom(netip.AddrFrom16(v6), 124)
	blocks := fmt.Sprintf(`load_balancer {
  settings = %s
  address_pool "v4" {
    addresses = [%q]
  }
  address_pool "v6" {
    addresses = [%q]
  }
}
`, harness.HCLObject(cloud.LBSettings()), pool4, pool6)
	cfg, _ := writeCloudConfig(t, t.TempDir(), blocks)
	serveNodes(t, cloud, 30080)
	createNode(t, client, cloud, "node-a")
	startCCM(t, cluster, cfg)

	mk := func(name string, nodePort int32, policy corev1.IPFamilyPolicy, families []corev1.IPFamily, ann map[string]string) {
		t.Helper()
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: ann},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
				IPFamilyPolicy: &policy, IPFamilies: families,
				Ports: []corev1.ServicePort{{Port: 80, NodePort: nodePort, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
		}
		if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dual := []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	mk("dual", 30080, corev1.IPFamilyPolicyRequireDualStack, dual, nil)
	chosen6 := pool6.Addr().Next().Next().String()
	mk("six", 0, corev1.IPFamilyPolicySingleStack, []corev1.IPFamily{corev1.IPv6Protocol}, map[string]string{"tfccm.io/load-balancer-ips": chosen6})
	mk("v4pool", 0, corev1.IPFamilyPolicyRequireDualStack, dual, map[string]string{"tfccm.io/address-pool": "v4"})

	ips := waitIngress(t, client, "dual", 2)
	if !pool4.Contains(netip.MustParseAddr(ips[0])) || !pool6.Contains(netip.MustParseAddr(ips[1])) {
		t.Fatalf("dual: status %v, want an address of pool v4 (%s) then one of pool v6 (%s)", ips, pool4, pool6)
	}
	backendsAre(t, ips[0], 80, "node-a")
	inCloud := localcloud.HTTPClient(cloud.CloudNetns, 3*time.Second)
	url6 := "http://" + netip.AddrPortFrom(netip.MustParseAddr(ips[1]), 80).String() + "/"
	eventually(t, time.Minute, "node-a answers on "+url6, func(ctx context.Context) error {
		body, err := testkit.GetOK(ctx, inCloud, url6)
		if err == nil && body != "node-a" {
			err = fmt.Errorf("answered %q", body)
		}
		return err
	})
	waitEvent(t, client, "dual", "LoadBalancerIPAssigned", "from pool v4, v6")

	if got := waitIngress(t, client, "six", 1); got[0] != chosen6 {
		t.Errorf("six: status %v, want the chosen %s", got, chosen6)
	}

	waitEvent(t, client, "v4pool", "LoadBalancerIPRefused", "no address pool this Service may use has IPv6 addresses (pools: v4)", "RequireDualStack")
	if s, err := client.CoreV1().Services("default").Get(ctx, "v4pool", metav1.GetOptions{}); err != nil || len(s.Status.LoadBalancer.Ingress) > 0 {
		t.Errorf("v4pool: status %v (%v), want none", s.Status.LoadBalancer.Ingress, err)
	}
}

// waitIngress waits until Service name's status has n ingress IPs and
// returns them in order.
func waitIngress(t *testing.T, client kubernetes.Interface, name string, n int) []string {
	t.Helper()
	var ips []string
	eventually(t, 2*time.Minute, fmt.Sprintf("%d ingress IPs on %s", n, name), func(ctx context.Context) error {
		s, err := client.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ips = ips[:0]
		for _, in := range s.Status.LoadBalancer.Ingress {
			ips = append(ips, in.IP)
		}
		if len(ips) != n {
			return fmt.Errorf("status %v", ips)
		}
		return nil
	})
	return ips
}
