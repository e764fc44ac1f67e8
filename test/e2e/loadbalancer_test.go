package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
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

// TestLoadBalancer drives the whole LoadBalancer path with real parts: the
// CCM binary's service controller, OpenTofu, HAProxy in the local cloud and
// HTTP servers in the node namespaces.
func TestLoadBalancer(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	cfg, workDir := writeCloudConfig(t, t.TempDir(), harness.Block("load_balancer", cloud.LBSettings()))

	// Every node runs a kube-proxy-like /healthz and a server on the
	// NodePorts the test uses; each answers with its node's name.
	for _, n := range cloud.Nodes() {
		for _, port := range []int{30080, 30081, 30082} {
			stop, err := cloud.ServeHTTP(n, port, n)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
		}
		stop, err := cloud.ServeHealthz(n, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	createNode(t, client, cloud, "node-a")
	createNode(t, client, cloud, "node-b")

	ccm := startCCM(t, cluster, cfg, "--concurrent-service-syncs=2")
	parent := t // owns every CCM process, so one outlives the subtest that starts it

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	svc, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	vip := waitVIP(t, client, "web")
	if _, pool, err := net.ParseCIDR(cloud.VIPPool); err != nil || !pool.Contains(net.ParseIP(vip)) {
		t.Errorf("VIP %s is not from the pool %s (%v)", vip, cloud.VIPPool, err)
	}
	t.Logf("VIP %s", vip)

	backendsAre(t, vip, 80, "node-a", "node-b")
	if states, _ := filepath.Glob(filepath.Join(workDir, "state", "lb-*.tfstate")); len(states) != 1 {
		t.Errorf("local state files: %v, want one", states)
	}

	t.Run("engine metrics on the CCM's /metrics", func(t *testing.T) {
		body := ccmMetrics(t, cluster, ccm)
		for _, want := range []string{
			`tfccm_workspace_operations_total{operation="apply",result="success"}`,
			`tfccm_workspace_operation_duration_seconds_count{operation="apply"}`,
			"tfccm_workspace_queue_depth",
			"tfccm_workspace_runs_in_flight",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})

	t.Run("added node receives traffic", func(t *testing.T) {
		createNode(t, client, cloud, "node-c")
		backendsAre(t, vip, 80, "node-a", "node-b", "node-c")
	})

	t.Run("node whose addresses arrive later receives traffic", func(t *testing.T) {
		// As a node joins a real cluster: the cloud node controller sets
		// providerID and labels in one update and status.addresses in a
		// later one, which the service controller does not sync on.
		registerNode(t, client, harness.Node{Name: "node-d"})
		time.Sleep(3 * time.Second) // the service controller updates the LB without it
		eventually(t, 30*time.Second, "set node-d's addresses", func(ctx context.Context) error {
			n, err := client.CoreV1().Nodes().Get(ctx, "node-d", metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: cloud.Node("node-c").Address}}
			_, err = client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
			return err
		})
		// node-d's address is node-c's, so its backend answers "node-c":
		// the LB now has that address twice, and a request to either
		// backend reaches node-c. What matters is that node-d's backend
		// appears in the fragment at all: the workspace's inputs list it.
		eventually(t, time.Minute, "node-d rendered with its address", func(context.Context) error {
			b, err := os.ReadFile(filepath.Join(lbWorkspaceDir(t, workDir), "tfccm.auto.tfvars"))
			if err != nil {
				return err
			}
			if !strings.Contains(string(b), `"node-d"`) || strings.Count(string(b), cloud.Node("node-c").Address) < 2 {
				return fmt.Errorf("node-d not rendered with its address yet")
			}
			return nil
		})
		backendsAre(t, vip, 80, "node-a", "node-b", "node-c")
		if err := client.CoreV1().Nodes().Delete(ctx, "node-d", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("excluded node stops receiving traffic", func(t *testing.T) {
		n, err := client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = "true"
		if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		backendsAre(t, vip, 80, "node-b", "node-c")
	})

	t.Run("port change is followed", func(t *testing.T) {
		updateService(t, client, func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 8080, NodePort: 30081, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}
		})
		backendsAre(t, vip, 8080, "node-b", "node-c")
		eventually(t, time.Minute, "old port 80 closed", func(context.Context) error {
			if _, err := get(vip, 80); err == nil {
				return fmt.Errorf("port 80 still answers")
			}
			return nil
		})
	})

	t.Run("source range excluding the client is refused", func(t *testing.T) {
		updateService(t, client, func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"} })
		eventually(t, time.Minute, "client refused", func(context.Context) error {
			if body, err := get(vip, 8080); err == nil {
				return fmt.Errorf("still served: %q", body)
			}
			return nil
		})
		updateService(t, client, func(s *corev1.Service) {
			s.Spec.LoadBalancerSourceRanges = []string{cloud.HostAddress + "/32"}
		})
		backendsAre(t, vip, 8080, "node-b", "node-c")
	})

	t.Run("bad tfccm.io/vars is an Event and leaves the LB untouched", func(t *testing.T) {
		lbDir := lbWorkspaceDir(t, workDir)
		before := settledTree(t, lbDir)
		updateService(t, client, func(s *corev1.Service) {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations["tfccm.io/vars"] = `{"no_such_setting": 1}`
		})
		eventually(t, time.Minute, "Warning Event naming the bad key", func(ctx context.Context) error {
			ev := harness.Events(ctx, client, svc.Namespace, svc.Name)
			if !strings.Contains(ev, "TerraformRenderFailed") || !strings.Contains(ev, "no_such_setting") {
				return fmt.Errorf("events: %s", ev)
			}
			return nil
		})
		backendsAre(t, vip, 8080, "node-b", "node-c")
		if after := readTree(t, lbDir); after != before {
			t.Errorf("workspace changed after a bad annotation")
		}
		updateService(t, client, func(s *corev1.Service) { delete(s.Annotations, "tfccm.io/vars") })
	})

	t.Run("externalTrafficPolicy Local checks healthCheckNodePort", func(t *testing.T) {
		// Only node-b answers on the Service's health check node port, as
		// kube-proxy does on nodes with a local endpoint.
		stop, err := cloud.ServeHTTP("node-b", 32100, "healthy")
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		local := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: "default"},
			Spec: corev1.ServiceSpec{
				Type:                  corev1.ServiceTypeLoadBalancer,
				ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
				HealthCheckNodePort:   32100,
				Ports:                 []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30082, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
			},
		}
		if _, err := client.CoreV1().Services("default").Create(ctx, local, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		localVIP := waitVIP(t, client, "local")
		if localVIP == vip {
			t.Fatalf("two Services share VIP %s", vip)
		}
		backendsAre(t, localVIP, 80, "node-b")
		if err := client.CoreV1().Services("default").Delete(ctx, "local", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitServiceDeleted(t, client, "local", time.Minute)
	})

	t.Run("unsupported UDP port is an Event and delays no other Service", func(t *testing.T) {
		dns := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "default"},
			Spec: corev1.ServiceSpec{
				Type:  corev1.ServiceTypeLoadBalancer,
				Ports: []corev1.ServicePort{{Name: "dns", Port: 53, NodePort: 30053, TargetPort: intstr.FromInt32(53), Protocol: corev1.ProtocolUDP}},
			},
		}
		dns, err := client.CoreV1().Services("default").Create(ctx, dns, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "Warning Event with tofu's message", func(ctx context.Context) error {
			ev := harness.Events(ctx, client, dns.Namespace, dns.Name)
			if !strings.Contains(ev, "TerraformInvalidInput") || !strings.Contains(ev, "53/UDP") {
				return fmt.Errorf("events: %s", ev)
			}
			return nil
		})
		// The failing Service retries with backoff; the other one changes
		// and is applied meanwhile.
		updateService(t, client, func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = nil })
		backendsAre(t, vip, 8080, "node-b", "node-c")
		if err := client.CoreV1().Services("default").Delete(ctx, "dns", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitServiceDeleted(t, client, "dns", time.Minute)
	})

	t.Run("CCM killed and restarted re-applies nothing", func(t *testing.T) {
		states, _ := filepath.Glob(filepath.Join(workDir, "state", "lb-*.tfstate"))
		if len(states) != 1 {
			t.Fatalf("state files: %v", states)
		}
		// The previous step's last change may still be applying (traffic
		// passes before it lands): start once the CCM has programmed the
		// Service's current generation and its engine has nothing queued
		// or running.
		eventually(t, 2*time.Minute, "the Service's last change applied and the engine idle", func(context.Context) error {
			if svc, c := conditionOf(t, client, "web", "tfccm.io/Programmed"); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != svc.Generation {
				return fmt.Errorf("Programmed %+v, generation %d", c, svc.Generation)
			}
			return engineIdle(ccmMetrics(t, cluster, ccm))
		})
		before, err := os.Stat(states[0])
		if err != nil {
			t.Fatal(err)
		}
		ccm.Kill()
		ccm = startCCM(parent, cluster, cfg, "--concurrent-service-syncs=2")
		// The restarted engine's decision for the Service's workspace is
		// either a no-op (its record says the content is applied) or a
		// run: wait for one of them, then for the engine to be idle, so a
		// wrong re-apply has happened by the time the state is checked.
		var m engineCounts
		eventually(t, 2*time.Minute, "the restarted CCM decides on the Service's workspace", func(context.Context) error {
			body := ccmMetrics(t, cluster, ccm)
			m = countEngine(body)
			if m.applyNoop+m.applyRuns == 0 {
				return fmt.Errorf("no apply decided yet (%+v)", m)
			}
			return engineIdle(body)
		})
		if m.applyRuns != 0 {
			t.Errorf("the restarted CCM ran tofu apply %d times (%d no-ops) for an unchanged Service", m.applyRuns, m.applyNoop)
		}
		backendsAre(t, vip, 8080, "node-b", "node-c")
		after, err := os.Stat(states[0])
		if err != nil {
			t.Fatal(err)
		}
		if !after.ModTime().Equal(before.ModTime()) {
			t.Errorf("state rewritten after a restart with nothing changed")
		}
		if log := ccm.Log(); strings.Contains(log, "TerraformApplied") {
			t.Errorf("the restarted CCM ran tofu for an unchanged Service")
		}
	})

	t.Run("delete removes frontend, state and finalizer", func(t *testing.T) {
		lbDir := lbWorkspaceDir(t, workDir)
		if err := client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitServiceDeleted(t, client, "web", 2*time.Minute)
		if _, err := os.Stat(lbDir); !os.IsNotExist(err) {
			t.Errorf("workspace %s still exists: %v", lbDir, err)
		}
		if states, _ := filepath.Glob(filepath.Join(workDir, "state", "lb-*")); len(states) != 0 {
			t.Errorf("state left behind: %v", states)
		}
		if _, err := get(vip, 8080); err == nil {
			t.Errorf("VIP %s still answers after delete", vip)
		}
		frags, _ := filepath.Glob(filepath.Join(cloud.StateDir, "haproxy", "*", "*.cfg"))
		for _, f := range frags {
			if strings.Contains(filepath.Base(f), "e2e") {
				t.Errorf("HAProxy fragment %s left behind", f)
			}
		}
	})
}

// createNode registers a Node for a local-cloud node the way a kubelet
// does: created with its InternalIP and Ready condition in one call.
func createNode(t *testing.T, client kubernetes.Interface, cloud *localcloud.Cloud, name string) {
	t.Helper()
	created := registerNode(t, client, harness.Node{Name: name, InternalIPs: []string{cloud.Node(name).Address}})
	if len(created.Status.Addresses) == 0 {
		t.Fatalf("node %s was created without its addresses", name)
	}
}

func updateService(t *testing.T, client kubernetes.Interface, mutate func(*corev1.Service)) {
	t.Helper()
	eventually(t, 30*time.Second, "update Service", func(ctx context.Context) error {
		s, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(s)
		_, err = client.CoreV1().Services("default").Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
}

// get does one HTTP GET to vip:port from the host.
func get(vip string, port int) (string, error) {
	body, err := testkit.Get(context.Background(), testkit.NewClient(2*time.Second), "http://"+net.JoinHostPort(vip, fmt.Sprint(port))+"/")
	return strings.TrimSpace(body), err
}

// backendsAre waits until requests to vip:port are answered by exactly the
// given nodes (every one of them seen, no other one seen in 30 requests).
func backendsAre(t *testing.T, vip string, port int, want ...string) {
	t.Helper()
	wantSet := strings.Join(want, ",")
	eventually(t, 2*time.Minute, fmt.Sprintf("%s:%d served by %s", vip, port, wantSet), func(context.Context) error {
		seen := map[string]bool{}
		for i := 0; i < 30; i++ {
			body, err := get(vip, port)
			if err != nil {
				return err
			}
			seen[body] = true
		}
		var got []string
		for k := range seen {
			got = append(got, k)
		}
		sort.Strings(got)
		if strings.Join(got, ",") != wantSet {
			return fmt.Errorf("served by %v", got)
		}
		return nil
	})
}

// lbWorkspaceDir finds the one load-balancer workspace under workDir.
func lbWorkspaceDir(t *testing.T, workDir string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(workDir, "lb-*"))
	if len(dirs) != 1 {
		t.Fatalf("load balancer workspaces under %s: %v", workDir, dirs)
	}
	return dirs[0]
}

// readTree returns a digest of every file under dir (names, sizes, mtimes).
// settledTree is readTree once the previous step's apply has finished:
// traffic can flow before tofu has written state and the engine its
// record, so a snapshot taken right away may catch the tail of that apply.
func settledTree(t *testing.T, dir string) string {
	t.Helper()
	var tree string
	eventually(t, time.Minute, "no apply in flight in "+dir, func(context.Context) error {
		a := readTree(t, dir)
		time.Sleep(2 * time.Second)
		if tree = readTree(t, dir); tree != a {
			return fmt.Errorf("workspace still changing")
		}
		return nil
	})
	return tree
}

func readTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %d\n", p, info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
