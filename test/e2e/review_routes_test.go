package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestReviewModeRoutes: in review mode the routes plan is published as
// tfccm-plan-routes in tfccm's namespace (kube-system by default) and no kernel route exists until the plan's
// hash is approved on that ConfigMap.
func TestReviewModeRoutes(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	cfg, _ := writeCloudConfig(t, t.TempDir(), fmt.Sprintf("routes {\n  batch_window = \"1s\"\n  settings     = %s\n}\n", harness.HCLObject(cloud.RoutesSettings())), "review = true")

	createRoutedNode(t, client, cloud, "node-b", []string{"10.244.2.0/24"})
	startCCM(t, cluster, cfg, routeFlags...)

	name := annotations.PlanConfigMapName("routes")
	var hash string
	eventually(t, 2*time.Minute, "routes plan published", func(ctx context.Context) error {
		cm, err := client.CoreV1().ConfigMaps(tfccmNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		hash = cm.Annotations[annotations.PlanHash]
		if len(hash) != 64 || !strings.Contains(cm.Data["summary"], "to add") {
			return fmt.Errorf("ConfigMap %s: hash %q summary %q", name, hash, cm.Data["summary"])
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	if err := routesPresent(cloud, []string{"10.244.2.0/24"}, nil); err == nil {
		t.Fatal("route in the kernel before its plan was approved")
	}

	cm, err := client.CoreV1().ConfigMaps(tfccmNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Annotations[annotations.ApprovedPlan.Name] = hash
	if _, err := client.CoreV1().ConfigMaps(tfccmNamespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "approved route in the kernel", func(context.Context) error {
		return routesPresent(cloud, []string{"10.244.2.0/24 via " + cloud.Node("node-b").Address}, nil)
	})
}
