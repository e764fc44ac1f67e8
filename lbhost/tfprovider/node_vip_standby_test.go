package tfprovider_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/nodelb/vipapi"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/l2seg"
)

// TestNodeVIPStandbyAgainstAPIServer: lbhost_node_vip's standby against a
// real kube-apiserver and two real node agents (a migration from MetalLB
// prepares node mode's VIPs while MetalLB's speakers still announce
// them). Applied on standby, the NodeVIP is written and apply returns
// without waiting; the agents hold nothing (nothing answers for the
// address) and report Announced=False, reason Standby, with no Warning
// Event. Flipping standby to false is an in-place update whose apply
// returns once an agent announced it, and the holder answers; flipping it
// back releases the address.
func TestNodeVIPStandbyAgainstAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	net := fmt.Sprintf("10.96.%d", os.Getpid()%250)
	seg := l2seg.New(t, l2seg.Options{Prefix: fmt.Sprintf("ns%d", os.Getpid()%100000), Net: net, Nodes: []string{"a", "b"}, Host: true})
	vip := seg.Addr(100)
	seg.AddVIPs(t, vip)
	nm := seg.StartNodeMode(t)
	cluster, client, ctx := nm.Cluster, nm.Cluster.Client(), context.Background()

	dir := t.TempDir()
	tofu := testkit.Tofu{Binary: repo.Tofu(t), Dir: dir, CLIConfig: cliConfig}
	write := func(body string) {
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(nodeVIPConfig(cluster.Kubeconfig(), body)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		out, err := tofu.Command(cctx, args...).CombinedOutput()
		return string(out), err
	}
	dyn := dynamic.NewForConfigOrDie(cluster.RESTConfig()).Resource(vipapi.GVR).Namespace("tfccm-system")
	get := func() *vipapi.NodeVIP {
		t.Helper()
		u, err := dyn.Get(ctx, "prep", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, err := vipapi.FromUnstructured(u)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// onStandby waits for the agents' report on the NodeVIP's current
	// generation: not announced, reason Standby, no holder.
	onStandby := func(when string) {
		t.Helper()
		err := harness.Eventually(ctx, time.Minute, "the agents report standby "+when, func(context.Context) error {
			v := get()
			c := v.Status.Announced()
			if c == nil || c.ObservedGeneration < v.Generation || c.Status != metav1.ConditionFalse || c.Reason != vipapi.ReasonStandby || v.Status.Holder != "" {
				return fmt.Errorf("status %+v (generation %d)", v.Status, v.Generation)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	silent := func(when string) {
		t.Helper()
		l2seg.Sh(t, "ip", "-n", seg.Netns(l2seg.Client), "neigh", "flush", "dev", "eth0")
		if got, err := seg.Ask(vip, 500*time.Millisecond); err == nil {
			t.Errorf("%s: %s answered by %q", when, vip, got)
		}
	}

	write(nodeVIP("prep", vip, `["a", "b"]`, "standby = true"))
	if out, err := run("init", "-input=false", "-no-color"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	start := time.Now()
	if out, err := run("apply", "-input=false", "-no-color", "-auto-approve"); err != nil {
		t.Fatalf("apply on standby: %v\n%s", err, out)
	}
	t.Logf("apply on standby returned in %v", time.Since(start).Round(time.Millisecond))
	if !get().Spec.Standby {
		t.Fatal("the NodeVIP was written without spec.standby")
	}
	onStandby("after the apply")
	silent("on standby")
	evs, err := client.CoreV1().Events("tfccm-system").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=prep"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Type == corev1.EventTypeWarning {
			t.Errorf("a Warning Event on a NodeVIP on standby: %s: %s", e.Reason, e.Message)
		}
	}

	// Taken over: in place, apply returns announced.
	write(nodeVIP("prep", vip, `["a", "b"]`, "standby = false"))
	plan, err := run("plan", "-input=false", "-no-color")
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, plan)
	}
	if !strings.Contains(plan, "~ standby") || !strings.Contains(plan, "1 to change, 0 to destroy") {
		t.Errorf("standby true -> false is not an in-place change:\n%s", plan)
	}
	start = time.Now()
	if out, err := run("apply", "-input=false", "-no-color", "-auto-approve"); err != nil {
		t.Fatalf("apply announcing: %v\n%s", err, out)
	}
	t.Logf("apply announcing (standby true -> false) returned in %v", time.Since(start).Round(time.Millisecond))
	v := get()
	if c := v.Status.Announced(); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration < v.Generation || v.Status.Holder == "" {
		t.Fatalf("after standby = false: %+v", v.Status)
	}
	if got, err := seg.Ask(vip, time.Second); got != v.Status.Holder {
		t.Errorf("%s held by %s: answered by %q (%v)", vip, v.Status.Holder, got, err)
	}
	out, _ := run("state", "show", "-no-color", "lbhost_node_vip.prep")
	if !strings.Contains(out, fmt.Sprintf("holder                  = %q", v.Status.Holder)) || !strings.Contains(out, "standby                 = false") {
		t.Errorf("state after the take-over lacks its holder %s or standby = false:\n%s", v.Status.Holder, out)
	}

	// Back on standby: released.
	write(nodeVIP("prep", vip, `["a", "b"]`, "standby = true"))
	if out, err := run("apply", "-input=false", "-no-color", "-auto-approve"); err != nil {
		t.Fatalf("apply back on standby: %v\n%s", err, out)
	}
	onStandby("once back on standby")
	silent("back on standby")
	write("")
	if out, err := run("apply", "-input=false", "-no-color", "-auto-approve"); err != nil {
		t.Fatalf("destroy: %v\n%s", err, out)
	}
}
