package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/devcluster"
)

// TestApproveListAsKubectlPlugin runs `kubectl tfccm approve` through the
// real kubectl's plugin lookup against a real apiserver: --list finds the
// plans of every Service in tfccm's namespace (only --namespace's Services
// when given; never a ConfigMap in a Service's own namespace), names each
// by its Service, and --context and $KUBECONFIG pick the cluster and the
// default namespace as kubectl's own flags do.
func TestApproveListAsKubectlPlugin(t *testing.T) {
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	ctx := context.Background()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	plugins := t.TempDir()
	if err := os.Symlink(repo.Build(t, "./cmd/tfccm"), filepath.Join(plugins, "kubectl-tfccm")); err != nil {
		t.Fatal(err)
	}
	// The kubeconfig's current context is unreachable; "lab" works and
	// defaults to namespace shop.
	kc, err := clientcmd.LoadFromFile(cluster.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	kc.Clusters["gone"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.Contexts["gone"] = &clientcmdapi.Context{Cluster: "gone", AuthInfo: "user"}
	kc.Contexts["lab"] = &clientcmdapi.Context{Cluster: "devcluster", AuthInfo: "user", Namespace: "shop"}
	kc.CurrentContext = "gone"
	kcPath := filepath.Join(t.TempDir(), "config")
	if err := clientcmd.WriteToFile(*kc, kcPath); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(root, "bin", "kubectl"), args...)
		cmd.Env = []string{"PATH=" + plugins + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "KUBECONFIG=" + kcPath}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	publishPlan := func(t *testing.T, ns, ws string, svc *corev1.Service, hash, summary string) {
		t.Helper()
		labels := map[string]string{annotations.ManagedBy: "tfccm", annotations.PlanKind: annotations.PlanOfRoutes}
		if svc != nil {
			labels[annotations.PlanKind] = annotations.PlanOfLoadBalancer
			labels[annotations.PlanServiceUID] = string(svc.UID)
			labels[annotations.PlanServiceNamespace] = svc.Namespace
			labels[annotations.PlanServiceName] = svc.Name
		}
		_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: annotations.PlanConfigMapName(ws), Labels: labels, Annotations: map[string]string{annotations.PlanHash: hash}},
			Data:       map[string]string{"summary": summary, "plan.txt": "..."},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	hashes := map[string]string{}
	for _, ns := range []string{"kube-system", "shop", "blog"} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for i, ns := range []string{"shop", "blog"} {
		svc, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web-" + ns, Namespace: ns},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hashes[ns] = strings.Repeat(string("ab"[i])+"1", 32)
		publishPlan(t, "kube-system", "lb-"+ns, svc, hashes[ns], ns+": 1 to add, 0 to change, 0 to destroy")
		// What an earlier tfccm (or the tenant) left in the Service's
		// namespace is not listed.
		publishPlan(t, ns, "lb-"+ns, svc, strings.Repeat("ee", 32), "stale")
	}
	hashes["routes"] = strings.Repeat("c2", 32)
	publishPlan(t, "kube-system", "routes", nil, hashes["routes"], "routes: 0 to add, 1 to change, 0 to destroy")
	hashes["peering"] = strings.Repeat("d3", 32)
	publishPlan(t, "kube-system", "bgp-peering", nil, hashes["peering"], "peering: 2 to add, 0 to change, 0 to destroy")
	// Not a plan: no hash.
	if _, err := client.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{annotations.ManagedBy: "tfccm"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if out, err := kubectl("plugin", "list"); err != nil || !strings.Contains(out, "kubectl-tfccm") {
		t.Fatalf("kubectl plugin list: %v\n%s", err, out)
	}
	if out, err := kubectl("tfccm", "approve", "--list"); err == nil || !strings.Contains(out, "127.0.0.1:1") {
		t.Fatalf("the current context (unreachable) was not used: %v\n%s", err, out)
	}
	out, err := kubectl("tfccm", "approve", "--list", "--context", "lab")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "NAMESPACE") {
		t.Fatalf("want a header and 4 plans:\n%s", out)
	}
	for i, want := range [][]string{
		{"-", "peering", hashes["peering"], "peering: 2 to add"},
		{"-", "routes", hashes["routes"], "routes: 0 to add, 1 to change"},
		{"blog", "service/web-blog", hashes["blog"], "blog: 1 to add"},
		{"shop", "service/web-shop", hashes["shop"], "shop: 1 to add"},
	} {
		f := strings.Fields(lines[i+1])
		if len(f) < 5 || f[0] != want[0] || f[1] != want[1] || f[3] != want[2] || !strings.Contains(lines[i+1], want[3]) || !strings.HasSuffix(f[2], "s") {
			t.Errorf("line %d = %q, want %q", i+1, lines[i+1], want)
		}
	}
	out, err = kubectl("tfccm", "approve", "--list", "--context", "lab", "--namespace", "blog")
	if err != nil || strings.Count(out, "\n") != 2 || !strings.Contains(out, "web-blog") {
		t.Errorf("--namespace blog: %v\n%s", err, out)
	}
	// The context's namespace (shop) is the Service's default.
	out, err = kubectl("tfccm", "approve", "--context", "lab", "--service", "web-shop", "--plan-hash", hashes["shop"])
	if err != nil || !strings.Contains(out, "Approved plan "+hashes["shop"]+" for Service shop/web-shop") {
		t.Fatalf("approve in the context's namespace: %v\n%s", err, out)
	}
	cm, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, annotations.PlanConfigMapName("lb-shop"), metav1.GetOptions{})
	if err != nil || cm.Annotations[annotations.ApprovedPlan.Name] != hashes["shop"] {
		t.Fatalf("approval not set: %v %v", err, cm.Annotations)
	}
}
