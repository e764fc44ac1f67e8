package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"

	"github.com/tfccm/tfccm/ipam/poolapi"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestAddressPoolObjects runs the local set with one cloud config block
// (auto_assign off) and AddressPool objects created while the CCM runs: an
// object's pool serves a new Service, a grown range serves the next one
// without a restart, the status counts right, an overlapping pool and one
// named as a block and one covering a node's address get a condition
// naming the problem and serve nothing,
// the pools in use keep their Services, and a pool restricted to another
// namespace (by name or by a namespace selector) does not serve a Service
// that names it, but serves its own namespace's.
func TestAddressPoolObjects(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	installPoolCRD(t, cluster)
	client := cluster.Client()
	pools := dynamic.NewForConfigOrDie(cluster.RESTConfig()).Resource(poolapi.GVR)
	ctx := context.Background()
	base := netip.MustParsePrefix(cloud.VIPPool).Addr().As4()
	at := func(last byte) string { a := base; a[3] = last; return netip.AddrFrom4(a).String() }
	cfg, workDir := writeCloudConfig(t, t.TempDir(), fmt.Sprintf(`load_balancer {
  settings = %s
  address_pool "blocks" {
    addresses   = [%q]
    auto_assign = false
  }
}
`, harness.HCLObject(cloud.LBSettings()), at(100)+"/30"))
	serveNodes(t, cloud, 30080)
	createNode(t, client, cloud, "node-a")
	ccm := startCCM(t, cluster, cfg)

	mk := func(name string, ann map[string]string) {
		t.Helper()
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: ann},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
				Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
		}
		if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create := func(name string, spec map[string]any) {
		t.Helper()
		if _, err := pools.Create(ctx, poolObj(name, spec), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	status := func(ctx context.Context, name string) (*poolapi.AddressPool, error) {
		u, err := pools.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return poolapi.FromUnstructured(u)
	}
	condition := func(name, typ, want string) {
		t.Helper()
		eventually(t, time.Minute, fmt.Sprintf("pool %s condition %s saying %q", name, typ, want), func(ctx context.Context) error {
			p, err := status(ctx, name)
			if err != nil {
				return err
			}
			for _, c := range p.Status.Conditions {
				if c.Type == typ && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, want) {
					return nil
				}
			}
			return fmt.Errorf("conditions %+v", p.Status.Conditions)
		})
	}

	create("web", map[string]any{"addresses": []any{at(20) + "-" + at(20)}})
	mk("one", nil)
	if got := waitVIP(t, client, "one"); got != at(20) {
		t.Fatalf("one got %s, want the object pool's %s", got, at(20))
	}

	// The range grown: the next Service gets the new address, no restart.
	u, err := pools.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedStringSlice(u.Object, []string{at(20) + "-" + at(21)}, "spec", "addresses"); err != nil {
		t.Fatal(err)
	}
	if _, err := pools.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "pool web's status counting the grown range", func(ctx context.Context) error {
		p, err := status(ctx, "web")
		if err != nil {
			return err
		}
		if p.Status.Total != "2" {
			return fmt.Errorf("status %+v", p.Status)
		}
		return nil
	})
	mk("two", nil)
	if got := waitVIP(t, client, "two"); got != at(21) {
		t.Fatalf("two got %s, want the grown range's %s", got, at(21))
	}
	eventually(t, time.Minute, "pool web's status: 2 total, 2 in use, 0 free, Ready", func(ctx context.Context) error {
		p, err := status(ctx, "web")
		if err != nil {
			return err
		}
		s := p.Status
		if s.Total != "2" || s.InUse != 2 || s.Free != "0" || s.IPv4 == nil || s.IPv4.InUse != 2 || s.IPv6 != nil || !ready(p) {
			return fmt.Errorf("status %+v", s)
		}
		return nil
	})

	t.Run("an overlapping pool and a name clash serve nothing", func(t *testing.T) {
		create("dup", map[string]any{"addresses": []any{at(21) + "/32"}, "autoAssign": false})
		condition("dup", poolapi.ConditionOverlaps, `of AddressPool "web"`)
		create("blocks", map[string]any{"addresses": []any{at(200) + "/32"}})
		condition("blocks", poolapi.ConditionInvalid, `The cloud config declares an address_pool "blocks"`)
		node, err := client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil || len(node.Status.Addresses) == 0 {
			t.Fatalf("node-a: %v %v", node, err)
		}
		var nodeIP string
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				nodeIP = a.Address
			}
		}
		create("nodes", map[string]any{"addresses": []any{nodeIP + "/32"}, "autoAssign": false})
		condition("nodes", poolapi.ConditionInvalid, "covers the address "+nodeIP+" of node node-a")
		mk("wants-dup", map[string]string{"tfccm.io/address-pool": "dup"})
		waitEvent(t, client, "wants-dup", "LoadBalancerIPRefused", "dup")
		for name, want := range map[string]string{"one": at(20), "two": at(21)} {
			if got := waitVIP(t, client, name); got != want {
				t.Errorf("%s has %s, want %s kept", name, got, want)
			}
		}
		condition("web", poolapi.ConditionReady, "serves")
	})

	t.Run("a pool of another namespace does not serve", func(t *testing.T) {
		create("team-a", map[string]any{"addresses": []any{at(30) + "/32"}, "namespaces": []any{"team-a"}})
		condition("team-a", poolapi.ConditionReady, "serves")
		mk("not-team-a", map[string]string{"tfccm.io/address-pool": "team-a"})
		waitEvent(t, client, "not-team-a", "LoadBalancerIPRefused", "team-a")
		s, err := client.CoreV1().Services("default").Get(ctx, "not-team-a", metav1.GetOptions{})
		if err != nil || len(s.Status.LoadBalancer.Ingress) > 0 {
			t.Errorf("not-team-a: status %v (%v), want none", s.Status.LoadBalancer.Ingress, err)
		}
		// By a namespace selector: the Namespaces' labels are read once
		// any pool object may select them.
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{"team": "b"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		create("team-b", map[string]any{"addresses": []any{at(31) + "/32"}, "namespaceSelectors": []any{"team=b"}})
		condition("team-b", poolapi.ConditionReady, "serves")
		mk("not-team-b", map[string]string{"tfccm.io/address-pool": "team-b"})
		waitEvent(t, client, "not-team-b", "LoadBalancerIPRefused", "team-b")
		inB := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "in-team-b", Namespace: "team-b", Annotations: map[string]string{"tfccm.io/address-pool": "team-b"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "b"},
				Ports: []corev1.ServicePort{{Port: 81, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
		}
		if _, err := client.CoreV1().Services("team-b").Create(ctx, inB, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "team-b's Service served from pool team-b", func(ctx context.Context) error {
			s, err := client.CoreV1().Services("team-b").Get(ctx, "in-team-b", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if ing := s.Status.LoadBalancer.Ingress; len(ing) != 1 || ing[0].IP != at(31) {
				return fmt.Errorf("ingress %v, want %s", ing, at(31))
			}
			return nil
		})
	})

	t.Run("tfccm render --pools and tfccm plan allocate as the controller", func(t *testing.T) {
		eventually(t, 2*time.Minute, "the engine idle", func(context.Context) error {
			return engineIdle(ccmMetrics(t, cluster, ccm))
		})
		dir := t.TempDir()
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes.APIVersion, nodes.Kind = "v1", "NodeList"
		list, err := pools.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc, err := client.CoreV1().Services("default").Get(ctx, "two", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc.APIVersion, svc.Kind = "v1", "Service"
		out := filepath.Join(dir, "two")
		stdout := runTfccm(t, 0, "render", "--config", cfg, "--service", writeYAML(t, dir, "two.yaml", svc),
			"--nodes", writeYAML(t, dir, "nodes.yaml", nodes), "--pools", writeYAML(t, dir, "pools.yaml", list), "--out", out)
		m := regexp.MustCompile(`Wrote workspace (\S+) `).FindStringSubmatch(stdout)
		if m == nil {
			t.Fatalf("tfccm render said: %s", stdout)
		}
		sameFiles(t, out, filepath.Join(workDir, m[1]))

		stdout = runTfccm(t, -1, "plan", "--config", cfg, "--kubeconfig", cluster.Kubeconfig(), "--format", "json")
		var report struct {
			Rows []struct {
				Target, Error        string
				Add, Change, Destroy int
			} `json:"workspaces"`
		}
		if err := json.Unmarshal([]byte(stdout), &report); err != nil {
			t.Fatalf("tfccm plan: %v\n%s", err, stdout)
		}
		seen := 0
		for _, r := range report.Rows {
			if r.Target == "default/one" || r.Target == "default/two" {
				seen++
				if r.Error != "" || r.Add+r.Change+r.Destroy > 0 {
					t.Errorf("%s: +%d ~%d -%d %s", r.Target, r.Add, r.Change, r.Destroy, r.Error)
				}
			}
		}
		if seen != 2 {
			t.Errorf("the plan has %d of the two Services:\n%s", seen, stdout)
		}
	})
}

// ready reports whether the pool's Ready condition is True.
func ready(p *poolapi.AddressPool) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == poolapi.ConditionReady {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
