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

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

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
	registerNode(t, client, harness.Node{Name: "node-a", Uninitialized: true})
	registerNode(t, client, harness.Node{Name: "node-b", Uninitialized: true, NotReady: true})
	registerNode(t, client, harness.Node{Name: "node-c", Uninitialized: true, NotReady: true})

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
				if taint.Key == harness.UninitializedTaint {
					return fmt.Errorf("still tainted %s", harness.UninitializedTaint)
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
