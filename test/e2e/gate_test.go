package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestPolicyAndChangeWindow runs the CCM with a policy rule and a change
// window that is closed for the whole test (its one allow window opens
// twelve hours from now), creates let through: a new Service gets its load
// balancer; a change the rule denies is an Event and a condition naming
// the rule; an allowed change is published but not applied, with the
// next opening in the Event and the condition, and the old load balancer
// keeps serving throughout.
func TestPolicyAndChangeWindow(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	opens := time.Now().UTC().Add(12 * time.Hour).Truncate(time.Minute)
	blocks := harness.Block("load_balancer", cloud.LBSettings()) + fmt.Sprintf(`
change_windows {
  allow_creates = true
  allow_deletes = true
  window "later" {
    kind     = "allow"
    schedule = "%d %d * * *"
    duration = "1h"
  }
}

policy "no-port-8443" {
  validation {
    expression         = "!plan.resource_changes.exists(rc, rc.type == 'lbhost_frontend' && rc.change.after != null && rc.change.after.ports.exists(p, p.port == 8443))"
    message_expression = "'a listener on port 8443 is not allowed (' + workspace.name + ')'"
  }
}
`, opens.Minute(), opens.Hour())
	cfg, _ := writeCloudConfig(t, t.TempDir(), blocks)
	serveNodes(t, cloud, 30080)
	createNode(t, client, cloud, "node-a")
	startCCM(t, cluster, cfg)

	svc := createHTTPService(t, client, "web", 80)
	vip := waitVIP(t, client, "web") // a create passes the closed window
	backendsAre(t, vip, 80, "node-a")

	setPort(t, client, "web", 8443)
	eventually(t, 2*time.Minute, "the denial named in an Event and a condition", func(ctx context.Context) error {
		if ev := harness.Events(ctx, client, "default", "web"); !strings.Contains(ev, lbcontroller.ReasonPlanDenied) || !strings.Contains(ev, "policy no-port-8443: a listener on port 8443 is not allowed") {
			return fmt.Errorf("events: %s", ev)
		}
		return programmed(ctx, client, lbcontroller.CondReasonPolicyDenied, "no-port-8443")
	})
	if body, err := get(vip, 80); err != nil || body != "node-a" {
		t.Fatalf("the old load balancer stopped serving after a denied plan: %q %v", body, err)
	}

	setPort(t, client, "web", 81)
	next := opens.Format(time.RFC3339)
	eventually(t, 2*time.Minute, "the held plan published, with the next opening", func(ctx context.Context) error {
		if ev := harness.Events(ctx, client, "default", "web"); !strings.Contains(ev, lbcontroller.ReasonChangeWindowClosed) || !strings.Contains(ev, "next window opens at "+next) {
			return fmt.Errorf("events: %s", ev)
		}
		if _, err := planConfigMap(ctx, client, svc); err != nil {
			return fmt.Errorf("plan ConfigMap: %w", err)
		}
		return programmed(ctx, client, lbcontroller.CondReasonChangeWindowClosed, "next window opens at "+next)
	})
	time.Sleep(3 * time.Second)
	if body, err := get(vip, 80); err != nil || body != "node-a" {
		t.Fatalf("the old load balancer stopped serving while the plan is held: %q %v", body, err)
	}
	if _, err := get(vip, 81); err == nil {
		t.Fatal("the held plan was applied: port 81 answers")
	}

	// Deletes pass (allow_deletes): the Service goes with its load balancer.
	if err := client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServiceDeleted(t, client, "web", 2*time.Minute)
	eventually(t, time.Minute, "plan ConfigMap removed", func(ctx context.Context) error {
		if _, err := planConfigMap(ctx, client, svc); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ConfigMap still there (%v)", err)
		}
		return nil
	})
}

// setPort changes the Service's one port.
func setPort(t *testing.T, client kubernetes.Interface, name string, port int32) {
	t.Helper()
	// The CCM writes the Service too (conditions, annotations): read it
	// again on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := client.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Ports[0].Port = port
		_, err = client.CoreV1().Services("default").Update(context.Background(), s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// programmed checks the web Service's tfccm.io/Programmed condition.
func programmed(ctx context.Context, client kubernetes.Interface, reason, message string) error {
	s, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range s.Status.Conditions {
		if c.Type == lbcontroller.ConditionProgrammed {
			if c.Status != metav1.ConditionFalse || c.Reason != reason || !strings.Contains(c.Message, message) || c.ObservedGeneration != s.Generation {
				return fmt.Errorf("condition %+v, want False %s with %q", c, reason, message)
			}
			return nil
		}
	}
	return fmt.Errorf("no %s condition", lbcontroller.ConditionProgrammed)
}
