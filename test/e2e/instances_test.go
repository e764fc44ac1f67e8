package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/localcloud"
)

const uninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

// TestInstances: nodes registered with the uninitialized taint are
// initialized from the local cloud's Terraform state; with the state
// unreadable no node is deleted; an instance removed from the infra has
// its NotReady node deleted.
func TestInstances(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	cfg, _ := writeCloudConfig(t, t.TempDir(), fmt.Sprintf(`load_balancer {
  enabled = false
}
instances {
  ttl           = "2s"
  max_staleness = "10m"
  refresh_rate  = 10
  source "infra" {
    dir = %q
  }
}
`, cloud.InfraDir()))

	// node-a is Ready; node-b and node-c never report Ready, so the
	// lifecycle controller asks the cloud about them every 5s.
	registerNode(t, client, "node-a", true)
	registerNode(t, client, "node-b", false)
	registerNode(t, client, "node-c", false)

	ccm := startCCM(t, cluster, cfg)

	for _, name := range []string{"node-a", "node-b", "node-c"} {
		info := cloud.Node(name)
		eventually(t, 60*time.Second, name+" initialized", func(ctx context.Context) error {
			n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if want := "terraform://local/" + name; n.Spec.ProviderID != want {
				return fmt.Errorf("providerID %q, want %q", n.Spec.ProviderID, want)
			}
			for k, v := range map[string]string{
				corev1.LabelInstanceTypeStable: info.InstanceType,
				corev1.LabelTopologyZone:       info.Zone,
				corev1.LabelTopologyRegion:     info.Region,
				"tfccm.io/netns":               info.Netns,
			} {
				if n.Labels[k] != v {
					return fmt.Errorf("label %s=%q, want %q (labels %v)", k, n.Labels[k], v, n.Labels)
				}
			}
			if !slices.Contains(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: info.Address}) {
				return fmt.Errorf("addresses %v lack InternalIP %s", n.Status.Addresses, info.Address)
			}
			for _, taint := range n.Spec.Taints {
				if taint.Key == uninitializedTaint {
					return fmt.Errorf("still tainted %s", uninitializedTaint)
				}
			}
			return nil
		})
	}

	// The state source becomes unreadable: the NotReady nodes must stay.
	away := cloud.InfraDir() + ".away"
	if err := os.Rename(cloud.InfraDir(), away); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := os.Rename(away, cloud.InfraDir()); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(restore)
	// Several lifecycle periods (5s) past the TTL.
	time.Sleep(20 * time.Second)
	for _, name := range []string{"node-a", "node-b", "node-c"} {
		if _, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("%s with the state source unavailable: %v", name, err)
		}
	}
	if !strings.Contains(ccm.Log(), `reading source "infra" failed`) {
		t.Fatal("the CCM never noticed the state source was unavailable")
	}
	restore()

	// node-c's instance goes away: its NotReady node is deleted; node-b
	// (NotReady, instance present) stays.
	if err := cloud.RemoveNode(ctx, "node-c"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "node-c deleted", func(ctx context.Context) error {
		_, err := client.CoreV1().Nodes().Get(ctx, "node-c", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("node-c still exists")
	})
	for _, name := range []string{"node-a", "node-b"} {
		if _, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("%s after node-c's removal: %v", name, err)
		}
	}
}

// registerNode creates a node as a kubelet with --cloud-provider=external
// would: tainted uninitialized, no providerID, Ready or not.
func registerNode(t *testing.T, client kubernetes.Interface, name string, ready bool) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: uninitializedTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
	}
	n, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
