package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/test/devcluster"
)

// TestServicesAgainstAPIServer: `tfccm services` lists the class-less and
// tfccm-class LoadBalancer Services (served, Pending, Terminating), --uninstall=refuse
// fails naming them, --uninstall=delete deletes them and returns once
// their finalizers are gone (the service controller removes them after
// tfccm's destroy; here the test does, a second later).
func TestServicesAgainstAPIServer(t *testing.T) {
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	class, mine := "example.com/other", config.DefaultLoadBalancerClass
	for _, s := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Finalizers: []string{cleanupFinalizer}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "pending"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "classed"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class, Ports: []corev1.ServicePort{{Port: 80}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "mine"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &mine, Ports: []corev1.ServicePort{{Port: 80}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
	} {
		if _, err := client.CoreV1().Services("default").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	web, _ := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	web.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}
	web.Status.Conditions = []metav1.Condition{{Type: lbcontroller.ConditionVIPHeld, Status: metav1.ConditionFalse, Reason: lbcontroller.CondReasonSplitBrain,
		Message: "IPv4 VIP held by lb-a and lb-b at once (VRRP split brain: the hosts do not hear each other)", LastTransitionTime: metav1.Now()}}
	if _, err := client.CoreV1().Services("default").UpdateStatus(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc := cluster.Kubeconfig()
	tfccm := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(append([]string{"services", "--kubeconfig", kc}, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}

	code, out, _ := tfccm()
	if code != exitOK || !strings.Contains(out, "192.0.2.10") || !strings.Contains(out, "Pending") ||
		strings.Contains(out, "classed") || strings.Contains(out, "plain") {
		t.Errorf("list: exit %d\n%s", code, out)
	}
	// HOLDER: the VIPHeld condition's hosts; "-" without one.
	for _, want := range []string{`(?m)^default +web +192\.0\.2\.10 +lb-a\+lb-b SPLIT +true$`, `(?m)^default +pending +Pending +- +false$`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line matching %s in:\n%s", want, out)
		}
	}
	// Class-less ones left to another implementation: only tfccm's class,
	// and what still holds a finalizer of tfccm's.
	code, out, _ = tfccm("--serve-classless=false")
	if code != exitOK || !strings.Contains(out, "mine") || !strings.Contains(out, "web") || strings.Contains(out, "pending") {
		t.Errorf("list with --serve-classless=false: exit %d\n%s", code, out)
	}
	cfg := filepath.Join(t.TempDir(), "cloud.hcl")
	if err := os.WriteFile(cfg, []byte("cluster_name = \"c\"\nserve_classless = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out2, _ := tfccm("--config", cfg); code != exitOK || out2 != out {
		t.Errorf("list with a cloud config setting serve_classless = false: exit %d\n%s", code, out2)
	}
	code, _, errOut := tfccm("--uninstall=refuse")
	if code != exitError || !strings.Contains(errOut, "tfccm serves 3 LoadBalancer Service(s): default/mine, default/pending, default/web") {
		t.Errorf("refuse: exit %d, %s", code, errOut)
	}
	if code, _, _ := tfccm("--uninstall=bogus"); code != exitUsage {
		t.Errorf("--uninstall=bogus: exit %d", code)
	}

	// The service controller's part: the finalizer goes after the destroy.
	go func() {
		time.Sleep(time.Second)
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		_, _ = client.CoreV1().Services("default").Patch(context.Background(), "web", types.MergePatchType, patch, metav1.PatchOptions{})
	}()
	code, out, errOut = tfccm("--uninstall=delete", "--timeout=60s")
	if code != exitOK || !strings.Contains(out, "deleted default/web") || !strings.Contains(out, "every load balancer is destroyed") {
		t.Errorf("delete: exit %d\n%s%s", code, out, errOut)
	}
	list, err := client.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, s := range list.Items {
		left = append(left, s.Name)
	}
	if strings.Join(left, ",") != "classed,kubernetes,plain" {
		t.Errorf("Services left: %v", left)
	}
}
