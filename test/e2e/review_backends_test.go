package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestReviewModeBackendsOnly: in review mode with the shipped rule
// backends-only-without-review (examples/policy), a node joining moves the
// load balancer's backends with no approval and no plan published, and a
// node leaving too; a port change still waits for a person, while the old
// load balancer serves.
func TestReviewModeBackendsOnly(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	rule, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "policy", "backends-only-without-review.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := writeCloudConfig(t, t.TempDir(), harness.Block("load_balancer", cloud.LBSettings())+"\n"+string(rule), "review = true")
	serveNodes(t, cloud, 30080, 30081)
	createNode(t, client, cloud, "node-a")
	startCCM(t, cluster, cfg)

	svc := createHTTPService(t, client, "web", 80)
	approvePlan(t, client, waitPendingPlan(t, client, svc, "apply plan", "to add")) // a create waits
	vip := waitVIP(t, client, "web")
	backendsAre(t, vip, 80, "node-a")
	noPlan := func(what string) {
		t.Helper()
		eventually(t, time.Minute, what+": no plan ConfigMap", func(ctx context.Context) error {
			if _, err := planConfigMap(ctx, client, svc); !apierrors.IsNotFound(err) {
				return fmt.Errorf("a plan ConfigMap is there (%v)", err)
			}
			return nil
		})
	}
	noPlan("after the first apply")

	createNode(t, client, cloud, "node-b")
	backendsAre(t, vip, 80, "node-a", "node-b")
	noPlan("a node joined")
	eventually(t, time.Minute, "the approving rule named in an Event", func(ctx context.Context) error {
		if ev := harness.Events(ctx, client, "default", "web"); !strings.Contains(ev, lbcontroller.ReasonPlanApprovedByPolicy) || !strings.Contains(ev, "policy backends-only-without-review approves the plan") {
			return fmt.Errorf("events: %s", ev)
		}
		return nil
	})
	if err := client.CoreV1().Nodes().Delete(context.Background(), "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	backendsAre(t, vip, 80, "node-b")
	noPlan("a node left")

	setPort(t, client, "web", 81)
	waitPendingPlan(t, client, svc, "apply plan", "to change")
	time.Sleep(3 * time.Second)
	if body, err := get(vip, 80); err != nil || body != "node-b" {
		t.Fatalf("the old load balancer stopped serving while the port change waits: %q %v", body, err)
	}
	if _, err := get(vip, 81); err == nil {
		t.Fatal("the port change was applied without approval: port 81 answers")
	}
	if ev := harness.Events(context.Background(), client, "default", "web"); !strings.Contains(ev, lbcontroller.ReasonPlanPendingApproval) {
		t.Fatalf("no %s Event for the port change: %s", lbcontroller.ReasonPlanPendingApproval, ev)
	}
	// The pending plan is a condition too, not only an Event.
	eventually(t, time.Minute, "Programmed=False AwaitingApproval for the port change", func(ctx context.Context) error {
		return programmed(ctx, client, lbcontroller.CondReasonAwaitingApproval, "awaits approval")
	})
}
