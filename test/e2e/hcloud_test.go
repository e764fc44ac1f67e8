package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/standin"
)

// TestHcloudThroughStandIn runs the CCM binary with the built-in hcloud set
// against the real control plane, with the hcloud provider played by the
// schema-backed stand-in: nodes are initialized from hcloud_server state,
// a Service gets the load balancer's address, targets follow the nodes,
// and deleting the Service destroys everything and releases the finalizer.
func TestHcloudThroughStandIn(t *testing.T) {
	env := standin.Setup(t, "hcloud")
	env.SetFixture(t, map[string]map[string]any{
		"hcloud_server":        {"datacenter": "fsn1-dc14", "status": "running"},
		"hcloud_load_balancer": {"network_zone": "eu-central"},
	})
	// The infrastructure: three servers in a network.
	infra, servers := applyStandInInfra(t, env, "hcloud", "hcloud_server") // node name -> server id
	if len(servers) != 3 {
		t.Fatalf("infrastructure servers %v", servers)
	}

	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	cfg, workDir := writeStandInCloudConfig(t, env, fmt.Sprintf(`template_set = "hcloud"
load_balancer {
  settings = { location = "fsn1" }
}
instances {
  ttl = "2s"
  source "infra" {
    dir = %q
  }
}
`, infra), `HCLOUD_TOKEN = "not-used-by-the-stand-in"`)

	registerNode(t, client, harness.Node{Name: "node-a", Uninitialized: true})
	registerNode(t, client, harness.Node{Name: "node-b", Uninitialized: true})
	ccm := startCCM(t, cluster, cfg)
	waitInitialized := func(name string) {
		eventually(t, 60*time.Second, name+" initialized from hcloud_server", func(ctx context.Context) error {
			n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if want := "hcloud://" + servers[name]; n.Spec.ProviderID != want {
				return fmt.Errorf("providerID %q, want %q", n.Spec.ProviderID, want)
			}
			if n.Labels[corev1.LabelTopologyRegion] != "fsn1" || n.Labels[corev1.LabelTopologyZone] != "fsn1-dc14" || n.Labels[corev1.LabelInstanceTypeStable] != "cx22" {
				return fmt.Errorf("labels %v", n.Labels)
			}
			return nil
		})
	}
	waitInitialized("node-a")
	waitInitialized("node-b")

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ip := waitVIP(t, client, "web")
	calls := env.Calls(t)
	var lb standin.Call
	targets := map[string]bool{}
	for _, c := range calls {
		switch c.Type {
		case "hcloud_load_balancer":
			lb = c
		case "hcloud_load_balancer_target":
			targets[fmt.Sprint(c.Values["server_id"])] = true
		}
	}
	if ip != lb.Values["ipv4"] {
		t.Errorf("status IP %s, want the load balancer's IPv4 %v (calls %+v)", ip, lb.Values["ipv4"], calls)
	}
	if len(targets) != 2 || !targets[servers["node-a"]] || !targets[servers["node-b"]] {
		t.Errorf("targets %v, want node-a's and node-b's servers %v", targets, servers)
	}
	s, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := s.Status.LoadBalancer.Ingress[0].IPMode; m == nil || *m != corev1.LoadBalancerIPModeProxy {
		t.Errorf("ipMode %v, want Proxy", m)
	}

	// Targets follow the nodes.
	registerNode(t, client, harness.Node{Name: "node-c", Uninitialized: true})
	waitInitialized("node-c")
	waitStandInCalls(t, env, "node-c's server becomes a target", func(cs []standin.Call) bool {
		return len(cs) == 1 && cs[0].Op == "create" && cs[0].Type == "hcloud_load_balancer_target" && fmt.Sprint(cs[0].Values["server_id"]) == servers["node-c"]
	})
	// The cloud saw the call while tofu applied: let that apply finish
	// first, so the next step starts from an idle engine.
	eventually(t, 2*time.Minute, "node-c's apply finished", func(context.Context) error {
		return engineIdle(ccmMetrics(t, cluster, ccm))
	})
	if extra := env.Calls(t); len(extra) > 0 {
		t.Fatalf("node-c's addition made more calls than its target's create: %+v", extra)
	}
	if err := client.CoreV1().Nodes().Delete(ctx, "node-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Two steps, each with its own deadline, so a slow run says which one
	// was slow: the service controller hands the new node set to tfccm,
	// then tfccm's engine applies it.
	eventually(t, 90*time.Second, "the service controller updates the load balancer without node-b", func(context.Context) error {
		if !strings.Contains(ccm.Log(), "Updating backends for load balancer default/web with 2 nodes: [node-a node-c]") {
			return fmt.Errorf("no update with [node-a node-c] in the CCM log")
		}
		return nil
	})
	waitStandInCalls(t, env, "node-b's target goes", func(cs []standin.Call) bool {
		return len(cs) == 1 && cs[0].Op == "delete" && cs[0].Type == "hcloud_load_balancer_target" && fmt.Sprint(cs[0].Prior["server_id"]) == servers["node-b"]
	})

	// Delete: everything destroyed, state gone, finalizer released.
	if err := client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "Service deleted (finalizer released)", func(ctx context.Context) error {
		_, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
	var deleted []string
	for _, c := range env.Calls(t) {
		if c.Op != "delete" {
			t.Errorf("destroy made a %s call: %+v", c.Op, c)
		}
		deleted = append(deleted, c.Type)
	}
	if len(deleted) != 4 { // load balancer, service, two targets
		t.Errorf("destroy calls %v, want the load balancer, its service and two targets", deleted)
	}
	if left, _ := filepath.Glob(filepath.Join(env.Store, "hcloud_load_balancer*", "*")); len(left) > 0 {
		t.Errorf("load balancer objects left in the cloud: %v", left)
	}
	if states, _ := filepath.Glob(filepath.Join(workDir, "state", "lb-*")); len(states) > 0 {
		t.Errorf("state left: %v", states)
	}
	out, _ := json.Marshal(deleted)
	if strings.Count(string(out), "hcloud_load_balancer_target") != 2 {
		t.Errorf("destroy calls %s", out)
	}
}
