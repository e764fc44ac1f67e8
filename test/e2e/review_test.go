package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestReviewMode: with terraform { review = true } nothing is applied or
// destroyed until the exact plan is approved on its ConfigMap in tfccm's
// namespace; the plan is published as an Event and that ConfigMap.
func TestReviewMode(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	cfg, workDir := writeCloudConfig(t, t.TempDir(), harness.Block("load_balancer", cloud.LBSettings()), "review = true")

	serveNodes(t, cloud, 30080)
	createNode(t, client, cloud, "node-a")
	createNode(t, client, cloud, "node-b")
	startCCM(t, cluster, cfg)

	svc := createHTTPService(t, client, "web", 80)

	// The plan is published, not applied.
	hash := waitPendingPlan(t, client, svc, "apply plan", "to add")
	time.Sleep(3 * time.Second)
	s, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Status.LoadBalancer.Ingress) != 0 {
		t.Fatalf("VIP %v assigned before approval", s.Status.LoadBalancer.Ingress)
	}
	if states, _ := filepath.Glob(filepath.Join(workDir, "state", "lb-*.tfstate")); len(states) != 0 {
		t.Fatalf("state written before approval: %v", states)
	}

	t.Run("a wrong hash is refused", func(t *testing.T) {
		approvePlan(t, client, strings.Repeat("0", 64))
		eventually(t, time.Minute, "refusal Event", func(ctx context.Context) error {
			if ev := harness.Events(ctx, client, svc.Namespace, svc.Name); !strings.Contains(ev, lbcontroller.ReasonPlanNotApproved) {
				return fmt.Errorf("events: %s", ev)
			}
			return nil
		})
		s, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || len(s.Status.LoadBalancer.Ingress) != 0 {
			t.Fatalf("wrong hash applied the plan: %v %v", err, s.Status.LoadBalancer.Ingress)
		}
	})

	approvePlan(t, client, hash)
	vip := waitVIP(t, client, "web")
	backendsAre(t, vip, 80, "node-a", "node-b")
	eventually(t, time.Minute, "plan ConfigMap removed after apply", func(ctx context.Context) error {
		if _, err := planConfigMap(ctx, client, svc); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ConfigMap still there (%v)", err)
		}
		return nil
	})

	// Deletion waits for the destroy plan's approval; the finalizer stays.
	if err := client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	destroyHash := waitPendingPlan(t, client, svc, "destroy plan", "to destroy")
	if destroyHash == hash {
		t.Fatal("the destroy plan has the apply plan's hash")
	}
	time.Sleep(3 * time.Second)
	s, err = client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Service gone before its destroy was approved: %v", err)
	}
	if s.DeletionTimestamp == nil || len(s.Finalizers) == 0 {
		t.Fatalf("Service %+v: want deleting with its finalizer", s.ObjectMeta)
	}
	if body, err := get(vip, 80); err != nil {
		t.Fatalf("load balancer destroyed before approval: %v", err)
	} else if body != "node-a" && body != "node-b" {
		t.Fatalf("unexpected answer %q", body)
	}

	approvePlan(t, client, destroyHash)
	waitServiceDeleted(t, client, "web", 2*time.Minute)
	eventually(t, time.Minute, "VIP stops answering", func(context.Context) error {
		if _, err := get(vip, 80); err == nil {
			return fmt.Errorf("%s still answers", vip)
		}
		return nil
	})
	eventually(t, time.Minute, "plan ConfigMap removed after destroy", func(ctx context.Context) error {
		if _, err := planConfigMap(ctx, client, svc); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ConfigMap still there (%v)", err)
		}
		return nil
	})
}

// tfccmNamespace is tfccm's own namespace in the tests' cloud configs (the
// default of the cloud config's namespace).
const tfccmNamespace = config.DefaultNamespace

// planConfigMap reads the ConfigMap publishing svc's plan in tfccm's
// namespace.
func planConfigMap(ctx context.Context, client kubernetes.Interface, svc *corev1.Service) (*corev1.ConfigMap, error) {
	return planConfigMapIn(ctx, client, tfccmNamespace, svc)
}

// planConfigMapIn reads the ConfigMap publishing svc's plan in namespace
// (tfccm's).
func planConfigMapIn(ctx context.Context, client kubernetes.Interface, namespace string, svc *corev1.Service) (*corev1.ConfigMap, error) {
	list, err := client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: annotations.PlanServiceUID + "=" + string(svc.UID)})
	if err != nil {
		return nil, err
	}
	if len(list.Items) != 1 {
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), fmt.Sprintf("plan of %s (%d found)", svc.Name, len(list.Items)))
	}
	cm := &list.Items[0]
	if cm.Labels[annotations.PlanServiceNamespace] != svc.Namespace || cm.Labels[annotations.PlanServiceName] != svc.Name || cm.Labels[annotations.PlanKind] != annotations.PlanOfLoadBalancer {
		return nil, fmt.Errorf("plan ConfigMap %s labels %v do not name Service %s/%s", cm.Name, cm.Labels, svc.Namespace, svc.Name)
	}
	return cm, nil
}

// waitPendingPlan waits for a plan of kind ("apply plan"/"destroy plan")
// published both as an Event naming its hash and as a ConfigMap carrying
// the same hash and text, and returns the hash.
func waitPendingPlan(t *testing.T, client kubernetes.Interface, svc *corev1.Service, kind, text string) string {
	t.Helper()
	var hash string
	eventually(t, 2*time.Minute, kind+" published", func(ctx context.Context) error {
		cm, err := planConfigMap(ctx, client, svc)
		if err != nil {
			return err
		}
		hash = cm.Annotations[annotations.PlanHash]
		if !annotations.ValidPlanHash(hash) {
			return fmt.Errorf("ConfigMap %s has plan hash %q", cm.Name, hash)
		}
		if !strings.HasPrefix(cm.Name, annotations.PlanConfigMapPrefix+"lb-") || cm.Labels[annotations.ManagedBy] != "tfccm" {
			return fmt.Errorf("ConfigMap %s labels %v", cm.Name, cm.Labels)
		}
		if !strings.Contains(cm.Data["plan.txt"], text) || !strings.Contains(cm.Data["summary"], text) {
			return fmt.Errorf("ConfigMap %s is not a plan with %q yet: %q", cm.Name, text, cm.Data["summary"])
		}
		var pub map[string]any
		if err := json.Unmarshal([]byte(cm.Data["plan.json"]), &pub); err != nil || pub["plan_hash"] != hash {
			return fmt.Errorf("plan.json: %v (hash %v)", err, pub["plan_hash"])
		}
		ev := harness.Events(ctx, client, svc.Namespace, svc.Name)
		if !strings.Contains(ev, lbcontroller.ReasonPlanPendingApproval) || !strings.Contains(ev, kind+" "+hash) {
			return fmt.Errorf("no %s Event for %s: %s", lbcontroller.ReasonPlanPendingApproval, hash, ev)
		}
		return nil
	})
	return hash
}

// approvePlan approves hash on the plan ConfigMap of Service default/web
// in tfccm's namespace, as an approver's `tfccm approve` does.
func approvePlan(t *testing.T, client kubernetes.Interface, hash string) {
	t.Helper()
	approvePlanIn(t, client, tfccmNamespace, "default", "web", hash)
}

// approvePlanIn approves hash on the plan ConfigMap of Service ns/name in
// tfccm's namespace tfccmNS.
func approvePlanIn(t *testing.T, client kubernetes.Interface, tfccmNS, ns, name, hash string) {
	t.Helper()
	ctx := context.Background()
	sel := annotations.PlanServiceNamespace + "=" + ns + "," + annotations.PlanServiceName + "=" + name
	list, err := client.CoreV1().ConfigMaps(tfccmNS).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d plan ConfigMaps of %s/%s in %s", len(list.Items), ns, name, tfccmNS)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{annotations.ApprovedPlan.Name: hash}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps(tfccmNS).Patch(ctx, list.Items[0].Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestReviewDriftRepair: in review mode with a drift interval, drift made
// behind tfccm's back (the Service's HAProxy fragment removed) is planned
// and published as a drift repair awaiting approval; it stays the same plan
// across drift intervals and the re-renders its approval causes, and the
// approved plan is applied: traffic comes back, with one
// TerraformDriftRepaired Event.
func TestReviewDriftRepair(t *testing.T) {
	const interval = 3 * time.Second
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	cfg, _ := writeCloudConfig(t, t.TempDir(), harness.Block("load_balancer", cloud.LBSettings()), "review = true", fmt.Sprintf("drift_interval = %q", interval))
	serveNodes(t, cloud, 30080)
	createNode(t, client, cloud, "node-a")
	startCCM(t, cluster, cfg)
	svc := createHTTPService(t, client, "web", 80)
	approvePlan(t, client, waitPendingPlan(t, client, svc, "apply plan", "to add"))
	vip := waitVIP(t, client, "web")
	backendsAre(t, vip, 80, "node-a")

	frags, _ := filepath.Glob(filepath.Join(cloud.StateDir, "fragments", "*.cfg"))
	if len(frags) != 1 {
		t.Fatalf("fragments: %v", frags)
	}
	if err := os.Remove(frags[0]); err != nil {
		t.Fatal(err)
	}
	reloadHAProxy(t, cloud)
	repair := waitPendingPlan(t, client, svc, "drift repair plan", "to destroy")
	if _, err := get(vip, 80); err == nil {
		t.Fatal("the load balancer still answers without its fragment; the test proves nothing")
	}

	// Two drift intervals later the same repair waits: not re-planned, not
	// dropped, not applied.
	time.Sleep(2*interval + time.Second)
	cm, err := planConfigMap(ctx, client, svc)
	if err != nil || cm.Annotations[annotations.PlanHash] != repair {
		t.Fatalf("after two drift intervals the published plan is %v (%v), want the repair %s", cm, err, repair)
	}
	ev := harness.Events(ctx, client, svc.Namespace, svc.Name)
	if n := strings.Count(ev, "drift repair plan "); n != 1 {
		t.Fatalf("%d drift repair plans published, want 1: %s", n, ev)
	}
	if _, err := get(vip, 80); err == nil {
		t.Fatal("the drift was repaired before its approval")
	}

	approvePlan(t, client, repair)
	backendsAre(t, vip, 80, "node-a")
	repaired := func() int {
		n, err := harness.EventCount(ctx, client, svc.Namespace, svc.Name, lbcontroller.ReasonDriftRepaired)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	eventually(t, time.Minute, "TerraformDriftRepaired Event", func(context.Context) error {
		if repaired() == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	time.Sleep(2*interval + time.Second) // later drift checks find nothing to repair
	if n := repaired(); n != 1 {
		t.Errorf("%d TerraformDriftRepaired Events, want 1: %s", n, harness.Events(ctx, client, svc.Namespace, svc.Name))
	}
	if n := strings.Count(harness.Events(ctx, client, svc.Namespace, svc.Name), "drift repair plan "); n != 1 {
		t.Errorf("%d drift repair plans published, want 1", n)
	}
}

// createHTTPService creates a LoadBalancer Service with one TCP port
// served by the nodes' NodePort 30080 (serveNodes).
func createHTTPService(t *testing.T, client kubernetes.Interface, name string, port int32) *corev1.Service {
	t.Helper()
	svc, err := client.CoreV1().Services("default").Create(context.Background(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Port: port, NodePort: 30080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}
