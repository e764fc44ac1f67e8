package e2e

// A tenant cannot reach past their own Service (#44): a tfccm.io/name or
// an allow-shared-ip key another namespace uses gets the tenant nothing of
// that namespace's load balancer or address.

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
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

// createNamespaces creates namespaces with the given labels.
func createNamespaces(t *testing.T, client kubernetes.Interface, labels map[string]string, names ...string) {
	t.Helper()
	for _, n := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: labels}}
		if _, err := client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// createServiceIn creates a LoadBalancer Service ns/name with one TCP port.
func createServiceIn(t *testing.T, client kubernetes.Interface, ns, name string, port, nodePort int32, ann map[string]string) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: port, NodePort: nodePort, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
	}
	created, err := client.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// vipIn waits for the ingress IP of Service ns/name.
func vipIn(t *testing.T, client kubernetes.Interface, ns, name string) string {
	t.Helper()
	vip, err := harness.WaitForIngress(context.Background(), client, ns, name, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return vip
}

// eventIn waits for an Event on Service ns/name whose text has every want.
func eventIn(t *testing.T, client kubernetes.Interface, ns, name string, want ...string) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("Event on %s/%s with %q", ns, name, want), func(ctx context.Context) error {
		ev := harness.Events(ctx, client, ns, name)
		if slices.ContainsFunc(strings.Split(ev, " | "), func(line string) bool {
			return !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(line, w) })
		}) {
			return nil
		}
		return fmt.Errorf("events: %s", ev)
	})
}

// noIngress fails unless Service ns/name has no load balancer address.
func noIngress(t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	s, err := client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || len(s.Status.LoadBalancer.Ingress) > 0 {
		t.Errorf("%s/%s: status %v (%v), want no address", ns, name, s.Status.LoadBalancer.Ingress, err)
	}
}

// hostObjects is what the local cloud's LB host holds: its HAProxy
// fragments and VIP claims, by name and content.
func hostObjects(t *testing.T, cloud *localcloud.Cloud) string {
	t.Helper()
	var b strings.Builder
	for _, dir := range []string{"fragments", "claims"} {
		files, _ := filepath.Glob(filepath.Join(cloud.StateDir, dir, "*"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s/%s:\n%s\n", dir, filepath.Base(f), data)
		}
	}
	return b.String()
}

// TestNameHeldByOneService runs the local set without address pools (the
// template allocates VIPs, as when the bug was found): two namespaces'
// Services with one tfccm.io/name. The second is refused with a Warning
// Event and Accepted=False naming the first, gets no address and nothing
// on the LB host; the first keeps serving; deleting the second changes
// nothing on the host; once the first is gone the second gets its own.
func TestNameHeldByOneService(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	cfg, workDir := writeCloudConfig(t, t.TempDir(), fmt.Sprintf("load_balancer {\n  settings = %s\n}\n", harness.HCLObject(cloud.LBSettings())))
	serveNodes(t, cloud, 30080, 30081)
	createNode(t, client, cloud, "node-a")
	createNamespaces(t, client, nil, "team-a", "team-b")
	startCCM(t, cluster, cfg)

	first := createServiceIn(t, client, "team-a", "web", 80, 30080, map[string]string{"tfccm.io/name": "shop"})
	vip := vipIn(t, client, "team-a", "web")
	backendsAre(t, vip, 80, "node-a")
	before := hostObjects(t, cloud)
	if strings.Contains(before, "_shop") || !strings.Contains(before, "e2e_e2e-") {
		t.Errorf("the LB host's objects are not keyed by the Service UID (load_balancer_id):\n%s", before)
	}

	// Created a second later at least: creationTimestamp has seconds.
	time.Sleep(1100 * time.Millisecond)
	second := createServiceIn(t, client, "team-b", "web", 82, 30081, map[string]string{"tfccm.io/name": "shop"})
	eventIn(t, client, "team-b", "web", "Warning", "LoadBalancerNameTaken", `the load balancer name "shop" is held by Service team-a/web`)
	eventually(t, time.Minute, "team-b/web Accepted=False NameTaken", func(ctx context.Context) error {
		s, err := client.CoreV1().Services("team-b").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range s.Status.Conditions {
			if c.Type == "tfccm.io/Accepted" && c.Status == metav1.ConditionFalse && c.Reason == "NameTaken" && strings.Contains(c.Message, "team-a/web") {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", s.Status.Conditions)
	})
	// Refused before anything rendered: no workspace, nothing on the host,
	// and the first still serves on its port (82 never opened on its VIP).
	noIngress(t, client, "team-b", "web")
	if dirs, _ := filepath.Glob(filepath.Join(workDir, "lb-*")); len(dirs) != 1 {
		t.Errorf("workspaces %v, want the first Service's only", dirs)
	}
	if after := hostObjects(t, cloud); after != before {
		t.Errorf("the LB host changed for the refused Service:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	backendsAre(t, vip, 80, "node-a")
	if _, err := get(vip, 82); err == nil {
		t.Errorf("%s:82 answers: the refused Service's port is on the first one's VIP", vip)
	}

	t.Run("deleting the refused Service changes nothing on the host", func(t *testing.T) {
		if err := client.CoreV1().Services("team-b").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := harness.WaitServiceDeleted(ctx, client, "team-b", "web", 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second) // a destroy would have started by now
		if after := hostObjects(t, cloud); after != before {
			t.Errorf("the LB host changed when the refused Service was deleted:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		backendsAre(t, vip, 80, "node-a")
		s, err := client.CoreV1().Services("team-a").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || len(s.Status.LoadBalancer.Ingress) != 1 || s.Status.LoadBalancer.Ingress[0].IP != vip {
			t.Errorf("team-a/web status %v (%v), want %s", s.Status.LoadBalancer.Ingress, err, vip)
		}
	})

	t.Run("the name is free once its holder is gone", func(t *testing.T) {
		createServiceIn(t, client, "team-b", "web", 82, 30081, map[string]string{"tfccm.io/name": "shop"})
		eventIn(t, client, "team-b", "web", "LoadBalancerNameTaken")
		if err := client.CoreV1().Services("team-a").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := harness.WaitServiceDeleted(ctx, client, "team-a", "web", 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		vip2 := vipIn(t, client, "team-b", "web")
		backendsAre(t, vip2, 82, "node-a")
	})
	_, _ = first, second
}

// TestNameHeldByOneServiceOnBaremetal is TestNameHeldByOneService's first
// part on two LB hosts (HAProxy and keepalived over SSH): the second
// Service with the name gets nothing on either host, the first keeps
// serving, and deleting the second changes no fragment, claim or VRRP
// instance.
func TestNameHeldByOneServiceOnBaremetal(t *testing.T) {
	b := newBaremetal(t, "")
	ctx := context.Background()
	serveNodes(t, b.cloud, 30080, 30081)
	createNode(t, b.client, b.cloud, "node-a")
	createNamespaces(t, b.client, nil, "team-a", "team-b")
	b.startCCM(t)
	hostFiles := func() string {
		var out strings.Builder
		for _, o := range b.objects() {
			host, rel, _ := strings.Cut(o, ":")
			fmt.Fprintf(&out, "%s:\n%s\n", o, mustReadFile(t, filepath.Join(b.hosts.Host(host).ConfigDir, rel)))
		}
		return out.String()
	}

	createServiceIn(t, b.client, "team-a", "web", 80, 30080, map[string]string{"tfccm.io/name": "shop"})
	vip := vipIn(t, b.client, "team-a", "web")
	backendsAre(t, vip, 80, "node-a")
	before := hostFiles()
	if strings.Contains(before, "_shop") || !strings.Contains(before, "keepalived/e2e_e2e-") {
		t.Errorf("the hosts' objects are not keyed by the Service UID (load_balancer_id):\n%s", before)
	}

	time.Sleep(1100 * time.Millisecond)
	createServiceIn(t, b.client, "team-b", "web", 82, 30081, map[string]string{"tfccm.io/name": "shop"})
	eventIn(t, b.client, "team-b", "web", "Warning", "LoadBalancerNameTaken", "held by Service team-a/web")
	noIngress(t, b.client, "team-b", "web")
	if after := hostFiles(); after != before {
		t.Errorf("the hosts changed for the refused Service:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if err := b.client.CoreV1().Services("team-b").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitServiceDeleted(ctx, b.client, "team-b", "web", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if after := hostFiles(); after != before {
		t.Errorf("the hosts changed when the refused Service was deleted:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	backendsAre(t, vip, 80, "node-a")
	if _, err := get(vip, 82); err == nil {
		t.Errorf("%s:82 answers: the refused Service's port is on the first one's VIP", vip)
	}
}

// TestSharedIPsPerNamespace runs the local set with address pools: one
// tfccm.io/allow-shared-ip key in two namespaces gets two addresses, and
// in one namespace one; a pool the admin restricted to one namespace is
// refused to another, named or by one of its addresses.
func TestSharedIPsPerNamespace(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	pool := netip.MustParsePrefix(cloud.VIPPool).Addr().As4()
	at := func(last byte) string { a := pool; a[3] = last; return netip.AddrFrom4(a).String() }
	blocks := fmt.Sprintf(`load_balancer {
  settings = %s
  address_pool "auto" {
    addresses = [%q]
  }
  address_pool "team-a-only" {
    addresses   = ["%s-%s"]
    auto_assign = false
    namespaces  = ["team-a"]
  }
}
`, harness.HCLObject(cloud.LBSettings()), at(16)+"/29", at(40), at(41))
	cfg, _ := writeCloudConfig(t, t.TempDir(), blocks)
	serveNodes(t, cloud, 30080, 30081, 30082)
	createNode(t, client, cloud, "node-a")
	createNamespaces(t, client, nil, "team-a", "team-b")
	startCCM(t, cluster, cfg)

	key := map[string]string{"tfccm.io/allow-shared-ip": "front"}
	createServiceIn(t, client, "team-a", "web", 80, 30080, key)
	createServiceIn(t, client, "team-b", "web", 81, 30081, key)
	createServiceIn(t, client, "team-a", "api", 82, 30082, key)
	a, b, api := vipIn(t, client, "team-a", "web"), vipIn(t, client, "team-b", "web"), vipIn(t, client, "team-a", "api")
	if a == b {
		t.Fatalf("team-a/web and team-b/web got one address %s with one key", a)
	}
	if api != a {
		t.Fatalf("team-a/api got %s, team-a/web %s: one key in one namespace shares", api, a)
	}
	backendsAre(t, a, 80, "node-a")
	backendsAre(t, a, 82, "node-a")
	backendsAre(t, b, 81, "node-a")
	if _, err := get(a, 81); err == nil {
		t.Errorf("%s:81 answers: team-b's port is on team-a's address", a)
	}

	t.Run("another namespace's address is refused with the key", func(t *testing.T) {
		createServiceIn(t, client, "team-b", "steal", 83, 0, map[string]string{"tfccm.io/allow-shared-ip": "front", "tfccm.io/load-balancer-ips": a})
		eventIn(t, client, "team-b", "steal", "Warning", "LoadBalancerIPConflict", "held by Service team-a/", "shares an address only within one namespace")
		noIngress(t, client, "team-b", "steal")
	})

	t.Run("a pool restricted to another namespace is refused", func(t *testing.T) {
		createServiceIn(t, client, "team-b", "named", 84, 0, map[string]string{"tfccm.io/address-pool": "team-a-only"})
		eventIn(t, client, "team-b", "named", "Warning", "LoadBalancerIPRefused", "address pool team-a-only serves only")
		createServiceIn(t, client, "team-b", "chosen", 85, 0, map[string]string{"tfccm.io/load-balancer-ips": at(40)})
		eventIn(t, client, "team-b", "chosen", "Warning", "LoadBalancerIPRefused", "requested address "+at(40)+": address pool team-a-only serves only")
		createServiceIn(t, client, "team-a", "chosen", 85, 0, map[string]string{"tfccm.io/load-balancer-ips": at(40)})
		if got := vipIn(t, client, "team-a", "chosen"); got != at(40) {
			t.Errorf("team-a/chosen got %s, want %s", got, at(40))
		}
		noIngress(t, client, "team-b", "named")
		noIngress(t, client, "team-b", "chosen")
	})
}
