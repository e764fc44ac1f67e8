package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	b, err := approvalPatch(`x"}`)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]map[string]string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("patch %s is not JSON: %v", b, err)
	}
	if got["metadata"]["annotations"][annotations.ApprovedPlan.Name] != `x"}` {
		t.Errorf("patch %s", b)
	}
}

// TestApproveAgainstAPIServer runs the command against a real apiserver:
// it shows the published plan, refuses a hash that is not the pending one
// and sets the annotation for the right one.
func TestApproveAgainstAPIServer(t *testing.T) {
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	svc, err := client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc := cluster.Kubeconfig()
	base := []string{"approve", "--kubeconfig", kc, "--namespace", "default", "--service", "web"}

	var out, errOut bytes.Buffer
	if code := run(base, &out, &errOut); code != exitError || !strings.Contains(errOut.String(), "no plan awaiting approval") {
		t.Fatalf("no plan: exit %d, %s", code, errOut.String())
	}

	hash := strings.Repeat("5e", 32)
	_, err = client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:        annotations.PlanConfigMapName("lb-x"),
			Labels:      map[string]string{annotations.ManagedBy: "tfccm", annotations.PlanServiceUID: string(svc.UID)},
			Annotations: map[string]string{annotations.PlanHash: hash},
		},
		Data: map[string]string{"summary": "1 to add, 0 to change, 0 to destroy", "plan.txt": "  # terraform_data.lb will be created"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	approved := func() string {
		s, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Annotations[annotations.ApprovedPlan.Name]
	}

	out.Reset()
	errOut.Reset()
	if code := run(base, &out, &errOut); code != exitOK {
		t.Fatalf("show: exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{hash, "1 to add", "terraform_data.lb will be created", "Not approved"} {
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

	out.Reset()
	errOut.Reset()
	if code := run(append(base, "--plan-hash", hash), &out, &errOut); code != exitOK {
		t.Fatalf("approve: exit %d, %s", code, errOut.String())
	}
	if got := approved(); got != hash {
		t.Fatalf("annotation %q, want %q", got, hash)
	}
}
