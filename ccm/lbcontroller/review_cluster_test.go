package lbcontroller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/plans"
)

// awaitingApprover is an engine whose every workspace awaits approval;
// it records the approvals.
type awaitingApprover struct{ approved *[]string }

func (a awaitingApprover) Approve(ws, hash string) error {
	*a.approved = append(*a.approved, ws+"="+hash)
	return nil
}
func (a awaitingApprover) Status(string) workspace.Status {
	return workspace.Status{Phase: workspace.PhaseAwaitingApproval}
}

// TestClusterPlans: the cluster workspaces' plans (routes, BGP peering)
// go through one code path: published in tfccm's namespace under the
// workspace's name with its kind, approved by name on that ConfigMap,
// withdrawn once applied.
func TestClusterPlans(t *testing.T) {
	for _, tc := range []struct{ ws, kind string }{
		{templates.RoutesWorkspaceName, annotations.PlanOfRoutes},
		{templates.PeeringWorkspaceName, annotations.PlanOfPeering},
	} {
		t.Run(tc.ws, func(t *testing.T) {
			ctx := t.Context()
			client := fake.NewClientset()
			var approved []string
			rv := newReviewer(awaitingApprover{&approved}, fakeRenderer{}, func(runtime.Object, string, string, string) {}, "tfccm")
			rv.setClient(client)
			p := &plans.PendingPlan{Hash: strings.Repeat("ab", 32), Add: 2}
			rv.clusterResult(tc.ws, workspace.Result{AwaitingApproval: true, Plan: p})
			name := annotations.PlanConfigMapName(tc.ws)
			cm, err := client.CoreV1().ConfigMaps("tfccm").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("plan not published as %s: %v", name, err)
			}
			if cm.Labels[annotations.PlanKind] != tc.kind || cm.Labels[annotations.PlanServiceUID] != "" || cm.Annotations[annotations.PlanHash] != p.Hash {
				t.Errorf("labels %v annotations %v", cm.Labels, cm.Annotations)
			}
			rv.checkClusterApproval(tc.ws)
			if len(approved) != 0 {
				t.Fatalf("approved %v without an approval", approved)
			}
			cm.Annotations[annotations.ApprovedPlan.Name] = p.Hash
			if _, err := client.CoreV1().ConfigMaps("tfccm").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			rv.planChanged(cm)
			if len(approved) != 1 || approved[0] != tc.ws+"="+p.Hash {
				t.Fatalf("approved %v, want %s=%s", approved, tc.ws, p.Hash)
			}
			rv.clusterResult(tc.ws, workspace.Result{Changed: true})
			if _, err := client.CoreV1().ConfigMaps("tfccm").Get(ctx, name, metav1.GetOptions{}); err == nil {
				t.Error("plan still published after the apply")
			}
			if got := clusterApproveCommand(tc.ws); got != map[string]string{templates.RoutesWorkspaceName: "tfccm approve --routes", templates.PeeringWorkspaceName: "tfccm approve --peering"}[tc.ws] {
				t.Errorf("approve command %q", got)
			}
		})
	}
}
