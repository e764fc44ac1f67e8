package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/standin"
)

// memberAddresses lists the member addresses of an openstack_lb_members_v2
// call's values, sorted.
func memberAddresses(values map[string]any) string {
	var out []string
	for _, m := range values["member"].([]any) {
		out = append(out, m.(map[string]any)["address"].(string))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// TestOpenStackThroughStandIn runs the CCM binary with the built-in
// openstack set against the real control plane, the OpenStack provider
// played by the schema-backed stand-in: nodes are initialized from
// openstack_compute_instance_v2 state (openstack:///<id>, flavor, zone,
// region, fixed IPs), a Service gets its floating IP, the pools' members
// follow nodes joining and leaving (one batch update per pool), and
// deleting the Service destroys everything and releases it.
func TestOpenStackThroughStandIn(t *testing.T) {
	env := standin.Setup(t, "openstack")
	env.SetFixture(t, map[string]map[string]any{
		"openstack_compute_instance_v2":      {"region": "RegionOne", "access_ip_v4": "", "network.fixed_ip_v6": "", "power_state": "active"},
		"openstack_lb_loadbalancer_v2":       {"vip_address": "10.0.10.100"},
		"openstack_networking_floatingip_v2": {"address": "198.51.100.10"},
	})
	infra, servers := applyStandInInfra(t, env, "openstack", "openstack_compute_instance_v2") // node name -> server id
	if len(servers) != 3 {
		t.Fatalf("infrastructure servers %v", servers)
	}

	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	cfg, workDir := writeStandInCloudConfig(t, env, fmt.Sprintf(`template_set = "openstack"
load_balancer {
  settings = { subnet_id = "8c0a2f6e-1111-4222-8333-444455556666", floating_network = "public" }
}
instances {
  ttl = "2s"
  source "infra" {
    dir = %q
  }
}
`, infra), `OS_CLOUD = "not-used-by-the-stand-in"`)

	for _, name := range []string{"node-a", "node-b"} {
		registerNode(t, client, harness.Node{Name: name, Uninitialized: true})
	}
	startCCM(t, cluster, cfg)
	waitInitialized := func(name, ip string) {
		eventually(t, 60*time.Second, name+" initialized from openstack_compute_instance_v2", func(ctx context.Context) error {
			n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if want := "openstack:///" + servers[name]; n.Spec.ProviderID != want {
				return fmt.Errorf("providerID %q, want %q", n.Spec.ProviderID, want)
			}
			if n.Labels[corev1.LabelTopologyRegion] != "RegionOne" || n.Labels[corev1.LabelTopologyZone] != "nova" || n.Labels[corev1.LabelInstanceTypeStable] != "m1.large" {
				return fmt.Errorf("labels %v", n.Labels)
			}
			if len(n.Status.Addresses) == 0 || n.Status.Addresses[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip}) {
				return fmt.Errorf("addresses %v, want InternalIP %s first", n.Status.Addresses, ip)
			}
			return nil
		})
	}
	waitInitialized("node-a", "10.0.10.2")
	waitInitialized("node-b", "10.0.10.3")

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
	if ip := waitVIP(t, client, "web"); ip != "198.51.100.10" {
		t.Errorf("status IP %s, want the floating IP 198.51.100.10", ip)
	}
	created := map[string]int{}
	var members standin.Call
	for _, c := range env.Calls(t) {
		created[c.Type]++
		if c.Type == "openstack_lb_members_v2" {
			members = c
		}
	}
	for _, typ := range []string{"openstack_lb_loadbalancer_v2", "openstack_lb_listener_v2", "openstack_lb_pool_v2", "openstack_lb_members_v2",
		"openstack_lb_monitor_v2", "openstack_networking_floatingip_v2", "openstack_networking_floatingip_associate_v2"} {
		if created[typ] != 1 {
			t.Errorf("%d %s created, want 1 (calls by type %v)", created[typ], typ, created)
		}
	}
	if got := memberAddresses(members.Values); got != "10.0.10.2,10.0.10.3" {
		t.Errorf("members %s, want node-a's and node-b's fixed IPs", got)
	}

	// Members follow the nodes: one batch update of the pool each time.
	membersUpdate := func(want string) func([]standin.Call) bool {
		return func(cs []standin.Call) bool {
			return len(cs) == 1 && cs[0].Op == "update" && cs[0].Type == "openstack_lb_members_v2" && memberAddresses(cs[0].Values) == want
		}
	}
	registerNode(t, client, harness.Node{Name: "node-c", Uninitialized: true})
	waitInitialized("node-c", "10.0.10.4")
	waitStandInCalls(t, env, "node-c becomes a member", membersUpdate("10.0.10.2,10.0.10.3,10.0.10.4"))
	if err := client.CoreV1().Nodes().Delete(ctx, "node-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStandInCalls(t, env, "node-b's member goes", membersUpdate("10.0.10.2,10.0.10.4"))

	// Delete: everything destroyed, state gone, finalizer released.
	if err := client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServiceDeleted(t, client, "web", 90*time.Second)
	deleted := 0
	for _, c := range env.Calls(t) {
		if c.Op != "delete" {
			t.Errorf("destroy made a %s call: %+v", c.Op, c)
		}
		deleted++
	}
	if deleted != 7 {
		t.Errorf("destroy made %d deletes, want 7 (everything created)", deleted)
	}
	if left, _ := filepath.Glob(filepath.Join(env.Store, "openstack_lb_*", "*")); len(left) > 0 {
		t.Errorf("load balancer objects left in the cloud: %v", left)
	}
	if states, _ := filepath.Glob(filepath.Join(workDir, "state", "lb-*")); len(states) > 0 {
		t.Errorf("state left: %v", states)
	}
}
