package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/standin"
)

// TestProxmoxInstancesOnly runs the CCM binary with the built-in proxmox
// set (instances only) against the real control plane, the bpg/proxmox
// provider played by the schema-backed stand-in: nodes are initialized
// from proxmox_virtual_environment_vm state like sergelogvinov's Proxmox
// CCM would (providerID, zone, region, type, addresses); a LoadBalancer
// Service gets a Warning Event saying the set has no load balancer module,
// nothing reaches the cloud, the CCM keeps running, and deleting the
// Service releases it.
func TestProxmoxInstancesOnly(t *testing.T) {
	env := standin.Setup(t, "proxmox")
	env.Only = []string{"proxmox_virtual_environment_vm"}
	env.SetFixture(t, map[string]map[string]any{
		"proxmox_virtual_environment_vm#node-a": {"ipv4_addresses": [][]string{{"127.0.0.1"}, {"10.0.10.2"}}, "ipv6_addresses": [][]string{}},
		"proxmox_virtual_environment_vm#node-b": {"ipv4_addresses": [][]string{{"127.0.0.1"}, {"10.0.10.3"}}, "ipv6_addresses": [][]string{}},
	})
	infra, _ := applyStandInInfra(t, env, "proxmox", "proxmox_virtual_environment_vm")

	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	cfg, _ := writeStandInCloudConfig(t, env, fmt.Sprintf(`template_set = "proxmox"
instances {
  ttl = "2s"
  source "infra" {
    dir = %q
  }
}
`, infra))

	registerNode(t, client, harness.Node{Name: "node-a", Uninitialized: true})
	registerNode(t, client, harness.Node{Name: "node-b", Uninitialized: true})
	ccm := startCCM(t, cluster, cfg)
	for name, want := range map[string]struct{ id, zone, ip string }{
		"node-a": {"proxmox://cluster-1/101", "pve1", "10.0.10.2"},
		"node-b": {"proxmox://cluster-1/102", "rack-2", "10.0.10.3"},
	} {
		eventually(t, 60*time.Second, name+" initialized from proxmox_virtual_environment_vm", func(ctx context.Context) error {
			n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if n.Spec.ProviderID != want.id {
				return fmt.Errorf("providerID %q, want %q", n.Spec.ProviderID, want.id)
			}
			if n.Labels[corev1.LabelTopologyRegion] != "cluster-1" || n.Labels[corev1.LabelTopologyZone] != want.zone || n.Labels[corev1.LabelInstanceTypeStable] != "4VCPU-8GB" {
				return fmt.Errorf("labels %v", n.Labels)
			}
			for _, a := range n.Status.Addresses {
				if a.Type == corev1.NodeInternalIP && a.Address == want.ip {
					return nil
				}
			}
			return fmt.Errorf("addresses %v, want InternalIP %s", n.Status.Addresses, want.ip)
		})
	}

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
	const want = "Warning TerraformRenderFailed: the template set has no load balancer module (its cloud has no load balancer product): add one with override_dir"
	eventually(t, 60*time.Second, "a Warning Event naming the missing load balancer module", func(ctx context.Context) error {
		if evs := harness.Events(ctx, client, "default", "web"); !strings.Contains(evs, want) {
			return fmt.Errorf("events: %s", evs)
		}
		return nil
	})
	s, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("status %+v, want none", s.Status.LoadBalancer)
	}
	if calls := env.Calls(t); len(calls) != 0 {
		t.Errorf("the cloud was called: %+v", calls)
	}
	if err := client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServiceDeleted(t, client, "web", 60*time.Second)
	if ccm.Exited() {
		t.Errorf("the CCM exited:\n%s", ccm.LogTail(40))
	}
}
