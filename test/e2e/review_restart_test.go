package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestReviewPlanSurvivesRestart: a pending plan is kept, sealed, in a
// Secret in tfccm's namespace; a CCM restarted with an empty work dir takes
// it back (no new plan, the same hash) and the approval of that hash
// applies it. A plan whose state changed while no CCM ran is refused with a
// TerraformPlanStale Event and planned again; the new plan's approval
// applies.
func TestReviewPlanSurvivesRestart(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	blocks := harness.Block("load_balancer", cloud.LBSettings()) +
		fmt.Sprintf("backend \"kubernetes\" {\n  config_path = %q\n  namespace   = \"default\"\n}\n", cluster.Kubeconfig())
	// A new work dir at every start; one CCM at a time, so no leader
	// election (a stopped leader does not release its Lease).
	newConfig := func() string {
		cfg, _ := writeCloudConfig(t, t.TempDir(), blocks, "review = true")
		return cfg
	}

	serveNodes(t, cloud, 30080, 30081)
	createNode(t, client, cloud, "node-a")
	createNode(t, client, cloud, "node-b")
	proc := startCCM(t, cluster, newConfig(), "--leader-elect=false")
	svc := createHTTPService(t, client, "web", 80)
	hash := waitPendingPlan(t, client, svc, "apply plan", "to add")

	sec := planSecret(t, client, svc, hash)
	if sealed := sec.Data["plan.sealed"]; bytes.Contains(sealed, []byte("node-a")) || bytes.Contains(sealed, []byte("PK\x03\x04")) {
		t.Fatal("the plan Secret holds the saved plan in clear")
	}
	// A new CCM with an empty work dir takes the kept plan back.
	restart := func(between func()) {
		t.Helper()
		proc.Stop()
		between()
		proc = startCCM(t, cluster, newConfig(), "--leader-elect=false")
		eventually(t, time.Minute, "plan taken back", func(context.Context) error {
			if !strings.Contains(proc.Log(), "Pending plan taken back") {
				return fmt.Errorf("not in the log yet")
			}
			return nil
		})
	}
	t.Logf("plan %s kept; restarting the CCM", hash)
	restart(func() {})
	t.Log("plan taken back; approving it")
	approvePlan(t, client, hash)
	vip := waitVIP(t, client, "web")
	backendsAre(t, vip, 80, "node-a", "node-b")
	if ev := harness.Events(ctx, client, svc.Namespace, svc.Name); strings.Count(ev, lbcontroller.ReasonPlanPendingApproval) != 1 {
		t.Errorf("want one pending plan (the one made before the restart): %s", ev)
	}
	eventually(t, time.Minute, "plan Secret deleted after apply", func(ctx context.Context) error {
		if _, err := client.CoreV1().Secrets(tfccmNamespace).Get(ctx, sec.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("plan Secret still there (%v)", err)
		}
		return nil
	})

	t.Log("applied; updating the Service")
	// An update waits for approval; the CCM stops; the state changes
	// behind its back (edited by hand: its serial bumped).
	updateService(t, client, func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "alt", Port: 81, NodePort: 30081, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP})
	})
	stale := waitNewPlan(t, client, svc, hash)
	planSecret(t, client, svc, stale)
	t.Logf("plan %s kept; restarting the CCM after a state change", stale)
	restart(func() { bumpStateSerial(t, client, "default") })
	approvePlan(t, client, stale)
	eventually(t, 2*time.Minute, "TerraformPlanStale Event", func(ctx context.Context) error {
		if ev := harness.Events(ctx, client, svc.Namespace, svc.Name); !strings.Contains(ev, lbcontroller.ReasonPlanStale) || !strings.Contains(ev, "state changed since the plan was made") {
			return fmt.Errorf("events: %s", ev)
		}
		return nil
	})
	fresh := waitNewPlan(t, client, svc, stale)
	t.Logf("stale plan refused; approving the new plan %s", fresh)
	if body, err := get(vip, 81); err == nil {
		t.Fatalf("port 81 answers (%q) although its plan was refused", body)
	}
	approvePlan(t, client, fresh)
	eventually(t, 2*time.Minute, "port 81 served", func(context.Context) error {
		_, err := get(vip, 81)
		return err
	})
}

// planSecret waits for the Secret keeping svc's pending plan hash in
// tfccm's namespace, labelled with svc (none in svc's namespace), and
// returns it.
func planSecret(t *testing.T, client kubernetes.Interface, svc *corev1.Service, hash string) *corev1.Secret {
	t.Helper()
	var sec *corev1.Secret
	eventually(t, time.Minute, "plan Secret", func(ctx context.Context) error {
		list, err := client.CoreV1().Secrets(tfccmNamespace).List(ctx, metav1.ListOptions{LabelSelector: annotations.PlanServiceUID + "=" + string(svc.UID)})
		if err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d plan Secrets", len(list.Items))
		}
		sec = &list.Items[0]
		if got := sec.Annotations[annotations.PlanHash]; got != hash {
			return fmt.Errorf("plan Secret %s keeps plan %s, want %s", sec.Name, got, hash)
		}
		if sec.Labels[annotations.PlanServiceNamespace] != svc.Namespace || sec.Labels[annotations.PlanServiceName] != svc.Name {
			return fmt.Errorf("plan Secret %s labels %v, want Service %s/%s", sec.Name, sec.Labels, svc.Namespace, svc.Name)
		}
		if own, err := client.CoreV1().Secrets(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: annotations.PlanServiceUID}); err != nil || len(own.Items) != 0 {
			return fmt.Errorf("plan Secrets in the Service's namespace: %v", err)
		}
		return nil
	})
	return sec
}

// waitNewPlan waits for a published plan other than old and returns its
// hash.
func waitNewPlan(t *testing.T, client kubernetes.Interface, svc *corev1.Service, old string) string {
	t.Helper()
	var hash string
	eventually(t, 2*time.Minute, "a new plan published", func(ctx context.Context) error {
		cm, err := planConfigMap(ctx, client, svc)
		if err != nil {
			return err
		}
		hash = cm.Annotations[annotations.PlanHash]
		if !annotations.ValidPlanHash(hash) || hash == old {
			return fmt.Errorf("published plan %q", hash)
		}
		if ev := harness.Events(ctx, client, svc.Namespace, svc.Name); !strings.Contains(ev, hash) {
			return fmt.Errorf("no Event names plan %s", hash)
		}
		return nil
	})
	return hash
}

// bumpStateSerial edits every kubernetes-backend state in namespace by
// hand: its serial goes up by one, nothing else changes.
func bumpStateSerial(t *testing.T, client kubernetes.Interface, namespace string) {
	t.Helper()
	states := backendStates(t, client, namespace)
	if len(states) == 0 {
		t.Fatal("no kubernetes-backend state to edit")
	}
	for _, st := range states {
		var doc map[string]any
		if err := json.Unmarshal(st.doc, &doc); err != nil {
			t.Fatalf("state Secret %s: %v", st.secret.Name, err)
		}
		doc["serial"] = doc["serial"].(float64) + 1
		raw, _ := json.Marshal(doc)
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(raw)
		_ = zw.Close()
		st.secret.Data["tfstate"] = buf.Bytes()
		if _, err := client.CoreV1().Secrets(namespace).Update(context.Background(), &st.secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// backendState is a kubernetes-backend state Secret and its document.
type backendState struct {
	secret corev1.Secret
	doc    []byte // gunzipped
}

// backendStates returns the kubernetes backend's states in namespace. A
// Secret with no state yet (the catalog's default workspace, which the
// backend makes empty when tofu selects another workspace) is left out.
func backendStates(t *testing.T, client kubernetes.Interface, namespace string) []backendState {
	t.Helper()
	list, err := client.CoreV1().Secrets(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []backendState
	for _, s := range list.Items {
		if !strings.HasPrefix(s.Name, "tfstate-") || len(s.Data["tfstate"]) == 0 {
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(s.Data["tfstate"]))
		if err != nil {
			t.Fatalf("state Secret %s: %v", s.Name, err)
		}
		doc, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("state Secret %s: %v", s.Name, err)
		}
		out = append(out, backendState{secret: s, doc: doc})
	}
	return out
}
