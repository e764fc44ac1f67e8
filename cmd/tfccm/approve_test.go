package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/test/devcluster"
)

func TestApproveUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing to approve", []string{}, "usage: tfccm approve"},
		{"both service and routes", []string{"--service", "web", "--routes"}, "usage: tfccm approve"},
		{"both routes and peering", []string{"--routes", "--peering"}, "usage: tfccm approve"},
		{"peering with --list", []string{"--list", "--peering"}, "usage: tfccm approve"},
		{"bad hash", []string{"--service", "web", "--plan-hash", "abc"}, "is not a plan hash"},
		{"extra args", []string{"--service", "web", "x"}, "usage: tfccm approve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(append([]string{"approve"}, tc.args...), &out, &errOut); code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr %q lacks %q", errOut.String(), tc.want)
			}
		})
	}
}

func TestApprovalPatch(t *testing.T) {
	for _, rv := range []string{"", "42"} {
		b, err := approvalPatch(`x"}`, rv)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Metadata struct {
				ResourceVersion string            `json:"resourceVersion"`
				Annotations     map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("patch %s is not JSON: %v", b, err)
		}
		if got.Metadata.Annotations[annotations.ApprovedPlan.Name] != `x"}` || got.Metadata.ResourceVersion != rv {
			t.Errorf("patch %s", b)
		}
	}
}

// TestApproveAgainstAPIServer runs the command against a real apiserver:
// it finds the plan in tfccm's namespace by the Service's labels (never
// reading the Service), shows it, refuses a hash that is not the pending
// one and sets the annotation on the plan's ConfigMap for the right one.
// A ConfigMap of the plan's name in the Service's namespace is not a plan,
// and an approval of a ConfigMap that changed since it was read is
// refused by the apiserver.
func TestApproveAgainstAPIServer(t *testing.T) {
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tfccm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc := cluster.Kubeconfig()
	base := []string{"approve", "--kubeconfig", kc, "--tfccm-namespace", "tfccm", "--namespace", "default", "--service", "web"}

	var out, errOut bytes.Buffer
	if code := run(base, &out, &errOut); code != exitError || !strings.Contains(errOut.String(), "no plan awaiting approval") {
		t.Fatalf("no plan: exit %d, %s", code, errOut.String())
	}

	hash := strings.Repeat("5e", 32)
	plan := func(ns string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: annotations.PlanConfigMapName("lb-x"),
				Labels: map[string]string{annotations.ManagedBy: "tfccm", annotations.PlanKind: annotations.PlanOfLoadBalancer, annotations.PlanServiceUID: "uid-1",
					annotations.PlanServiceNamespace: "default", annotations.PlanServiceName: "web"},
				Annotations: map[string]string{annotations.PlanHash: hash},
			},
			Data: map[string]string{"summary": "1 to add, 0 to change, 0 to destroy", "plan.txt": "  # terraform_data.lb will be created"},
		}
	}
	// A tenant's copy in the Service's namespace is no plan.
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, plan("default"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	if code := run(base, &out, &errOut); code != exitError || !strings.Contains(errOut.String(), "no plan awaiting approval") {
		t.Fatalf("a ConfigMap in the Service's namespace was taken for the plan: exit %d, %s", code, out.String())
	}
	if _, err := client.CoreV1().ConfigMaps("tfccm").Create(ctx, plan("tfccm"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	approved := func() string {
		cm, err := client.CoreV1().ConfigMaps("tfccm").Get(ctx, annotations.PlanConfigMapName("lb-x"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Annotations[annotations.ApprovedPlan.Name]
	}

	out.Reset()
	errOut.Reset()
	if code := run(base, &out, &errOut); code != exitOK {
		t.Fatalf("show: exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{hash, "1 to add", "terraform_data.lb will be created", "Not approved", "ConfigMap tfccm/tfccm-plan-lb-x"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if approved() != "" {
		t.Fatal("showing the plan approved it")
	}

	out.Reset()
	errOut.Reset()
	if code := run(append(base, "--plan-hash", strings.Repeat("0", 64)), &out, &errOut); code != exitError || !strings.Contains(errOut.String(), "is not the pending plan") {
		t.Fatalf("wrong hash: exit %d, %s", code, errOut.String())
	}
	if approved() != "" {
		t.Fatal("a wrong hash was written")
	}

	// The approval carries the version read: a plan replaced since is not
	// approved.
	read, err := client.CoreV1().ConfigMaps("tfccm").Get(ctx, annotations.PlanConfigMapName("lb-x"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replaced := read.DeepCopy()
	replaced.Data["summary"] = "2 to add"
	if _, err := client.CoreV1().ConfigMaps("tfccm").Update(ctx, replaced, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale, err := approvalPatch(hash, read.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("tfccm").Patch(ctx, read.Name, types.MergePatchType, stale, metav1.PatchOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("approval of a ConfigMap changed since it was read: %v, want a conflict", err)
	}

	out.Reset()
	errOut.Reset()
	if code := run(append(base, "--plan-hash", hash), &out, &errOut); code != exitOK {
		t.Fatalf("approve: exit %d, %s", code, errOut.String())
	}
	if got := approved(); got != hash {
		t.Fatalf("annotation %q, want %q", got, hash)
	}
	if s, err := client.CoreV1().ConfigMaps("default").Get(ctx, annotations.PlanConfigMapName("lb-x"), metav1.GetOptions{}); err != nil || s.Annotations[annotations.ApprovedPlan.Name] != "" {
		t.Fatalf("the tenant's copy was written: %v %v", err, s.Annotations)
	}
}
