package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"

	"github.com/tfccm/tfccm/ipam/metallb"
	"github.com/tfccm/tfccm/ipam/poolapi"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// metallbCRDs is the directory of MetalLB's own CRDs: bin/metallb-crds
// (make tools-metallb), else the pinned MetalLB module's source (a module
// download, no build), where tools-metallb takes them from.
func metallbCRDs(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	if dir := filepath.Join(root, "bin", "metallb-crds"); fileExists(filepath.Join(dir, "metallb.io_ipaddresspools.yaml")) {
		return dir
	}
	// Downloaded from the module proxy when the module cache lacks it (a
	// fresh machine): `go list -m` would name no directory then.
	cmd := exec.Command("go", "mod", "download", "-json", "go.universe.tf/metallb")
	cmd.Dir = filepath.Join(root, "hack", "tools", "metallb")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	if err != nil || mod.Dir == "" {
		t.Fatalf("MetalLB's CRDs: no bin/metallb-crds, and the MetalLB module could not be downloaded: %v %s", err, mod.Error)
	}
	return filepath.Join(mod.Dir, "config", "crd", "bases")
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestMetalLBPools runs the local set with compat { metallb = true }
// beside MetalLB's own CRDs (no MetalLB controller): MetalLB's
// IPAddressPools serve as they are, named by MetalLB's annotation; a
// tfccm AddressPool comes first (a MetalLB pool of its name, or
// overlapping it, serves nothing); MetalLB's serviceAllocation holds for
// tenants (a Service of another namespace naming a pool given to team-a
// is refused); an edit of a MetalLB pool serves the next Service without a
// restart.
func TestMetalLBPools(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	installPoolCRD(t, cluster)
	client := cluster.Client()
	cfg, _ := writeCloudConfig(t, t.TempDir(), fmt.Sprintf(`load_balancer {
  settings = %s
}
compat {
  metallb = true
}
`, harness.HCLObject(cloud.LBSettings())))
	serveNodes(t, cloud, 30080)
	createNode(t, client, cloud, "node-a")
	// MetalLB is installed after tfccm starts: its CRDs are seen without a
	// restart.
	ccm := startCCM(t, cluster, cfg)
	eventually(t, time.Minute, "the CCM finds no MetalLB CRD", func(context.Context) error {
		if !strings.Contains(ccm.LogTail(400), "MetalLB's pools are not read until it appears") {
			return fmt.Errorf("not in its log yet")
		}
		return nil
	})
	kubectl := filepath.Join(repoRoot(t), "bin", "kubectl")
	if out, err := exec.Command(kubectl, "--kubeconfig", cluster.Kubeconfig(), "apply", "--server-side", "-f", metallbCRDs(t)).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply MetalLB's CRDs: %v\n%s", err, out)
	}
	if out, err := exec.Command(kubectl, "--kubeconfig", cluster.Kubeconfig(), "wait", "--for=condition=Established", "crd/ipaddresspools.metallb.io", "crd/l2advertisements.metallb.io", "--timeout=60s").CombinedOutput(); err != nil {
		t.Fatalf("kubectl wait for MetalLB's CRDs: %v\n%s", err, out)
	}
	dyn := dynamic.NewForConfigOrDie(cluster.RESTConfig())
	ctx := context.Background()
	for _, ns := range []string{"metallb-system", "team-a"} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	base := netip.MustParsePrefix(cloud.VIPPool).Addr().As4()
	at := func(last byte) string { a := base; a[3] = last; return netip.AddrFrom4(a).String() }
	mlb := func(kind, name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": metallb.Group + "/" + metallb.Version, "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": "metallb-system"},
			"spec":     spec,
		}}
	}
	create := func(kind, name string, spec map[string]any) {
		t.Helper()
		gvr := metallb.PoolsGVR
		if kind == "L2Advertisement" {
			gvr = metallb.L2GVR
		}
		if _, err := dyn.Resource(gvr).Namespace("metallb-system").Create(ctx, mlb(kind, name, spec), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s: %v", kind, name, err)
		}
	}
	if _, err := dyn.Resource(poolapi.GVR).Create(ctx, poolObj("web", map[string]any{"addresses": []any{at(20) + "/32"}, "autoAssign": false}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create("IPAddressPool", "lan", map[string]any{"addresses": []any{at(30) + "-" + at(30)}})
	create("IPAddressPool", "web", map[string]any{"addresses": []any{at(40) + "/32"}})
	create("IPAddressPool", "overlap", map[string]any{"addresses": []any{at(20) + "-" + at(21)}, "autoAssign": false})
	create("IPAddressPool", "team-a", map[string]any{"addresses": []any{at(50) + "/32"}, "serviceAllocation": map[string]any{"namespaces": []any{"team-a"}}})
	create("L2Advertisement", "all", map[string]any{})
	eventually(t, time.Minute, "the CCM reads MetalLB's pools, installed after it started", func(context.Context) error {
		if tail := ccm.LogTail(400); !strings.Contains(tail, "Pool CRDs appeared") || !strings.Contains(tail, "IPAddressPool metallb-system/team-a") {
			return fmt.Errorf("not in its log yet")
		}
		return nil
	})

	mk := func(ns, name string, ann map[string]string) {
		t.Helper()
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
				Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
		}
		if _, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pool := func(name string) map[string]string {
		return map[string]string{"metallb.universe.tf/address-pool": name}
	}

	began := time.Now()
	phase := func(what string) { t.Logf("%s: %s", what, time.Since(began).Round(100*time.Millisecond)) }
	phase("the CCM started")
	mk("default", "from-lan", pool("lan"))
	if got := waitVIP(t, client, "from-lan"); got != at(30) {
		t.Errorf("from-lan got %s, want MetalLB's pool lan's %s", got, at(30))
	}
	mk("default", "from-web", pool("web"))
	if got := waitVIP(t, client, "from-web"); got != at(20) {
		t.Errorf("from-web got %s, want tfccm's AddressPool web's %s (not MetalLB's pool of that name, %s)", got, at(20), at(40))
	}
	phase("two Services served")
	mk("default", "from-overlap", pool("overlap"))
	waitEvent(t, client, "from-overlap", "LoadBalancerIPRefused", "overlap")
	mk("default", "tenant", pool("team-a"))
	waitEvent(t, client, "tenant", "LoadBalancerIPRefused", "team-a")
	noIngress(t, client, "default", "tenant")

	phase("two refused")
	// An edit of MetalLB's pool serves the next Service, no restart.
	u, err := dyn.Resource(metallb.PoolsGVR).Namespace("metallb-system").Get(ctx, "lan", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedStringSlice(u.Object, []string{at(30) + "-" + at(31)}, "spec", "addresses"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(metallb.PoolsGVR).Namespace("metallb-system").Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mk("default", "grown", pool("lan"))
	if got := waitVIP(t, client, "grown"); got != at(31) {
		t.Errorf("grown got %s, want the grown MetalLB pool's %s", got, at(31))
	}
	phase("the grown pool served")
}
