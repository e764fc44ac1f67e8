package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tfccm/tfccm/ipam/poolapi"
	"github.com/tfccm/tfccm/test/devcluster"
)

// installPoolCRD applies the chart's AddressPool CRD to cluster and waits
// until it is established.
func installPoolCRD(t *testing.T, cluster *devcluster.Cluster) {
	t.Helper()
	kubectl := filepath.Join(repoRoot(t), "bin", "kubectl")
	crd := filepath.Join(repoRoot(t), "deploy", "helm", "tfccm", "crds", "tfccm.io_addresspools.yaml")
	if out, err := exec.Command(kubectl, "--kubeconfig", cluster.Kubeconfig(), "apply", "-f", crd).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply the AddressPool CRD: %v\n%s", err, out)
	}
	if out, err := exec.Command(kubectl, "--kubeconfig", cluster.Kubeconfig(), "wait", "--for=condition=Established", "crd/addresspools.tfccm.io", "--timeout=60s").CombinedOutput(); err != nil {
		t.Fatalf("kubectl wait for the CRD: %v\n%s", err, out)
	}
}

// poolObj is an AddressPool named name with spec, as a dynamic client
// sends it.
func poolObj(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": poolapi.Group + "/" + poolapi.Version, "kind": poolapi.Kind,
		"metadata": map[string]any{"name": name},
		"spec":     spec,
	}}
}

// TestAddressPoolValidation creates AddressPools on a real kube-apiserver:
// the CRD's schema and CEL rules refuse each bad spec with a message that
// names the problem (nothing is stored), and accept the good ones; what
// the apiserver cannot check (a selector that does not parse, host bits)
// is stored and refused by the book as Invalid.
func TestAddressPoolValidation(t *testing.T) {
	cluster := devcluster.ForTest(t)
	installPoolCRD(t, cluster)
	dyn := dynamic.NewForConfigOrDie(cluster.RESTConfig())
	pools := dyn.Resource(poolapi.GVR)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		spec   map[string]any
		refuse string // a substring of the apiserver's refusal, "" to accept
	}{
		{name: "v4-cidr", spec: map[string]any{"addresses": []any{"10.252.0.0/26"}}},
		{name: "dual", spec: map[string]any{"addresses": []any{"10.252.1.10-10.252.1.20", "2001:db8::10-2001:db8::20", "2001:db8:1::/120"}, "priority": 2, "autoAssign": false, "network": map[string]any{"interface": "vlan20", "hosts": []any{"lb1"}}}},
		{name: "reversed", spec: map[string]any{"addresses": []any{"10.252.2.20-10.252.2.10"}}, refuse: "the range is reversed"},
		{name: "reversed-last-octet-only", spec: map[string]any{"addresses": []any{"10.252.3.9-10.252.3.1"}}, refuse: "the range is reversed"},
		{name: "mixed-families", spec: map[string]any{"addresses": []any{"10.252.4.1-2001:db8::1"}}, refuse: "of one family"},
		{name: "not-an-address", spec: map[string]any{"addresses": []any{"10.252.5.0/33"}}, refuse: "must be a CIDR"},
		{name: "a-single-address", spec: map[string]any{"addresses": []any{"10.252.6.1"}}, refuse: "must be a CIDR"},
		{name: "spaces", spec: map[string]any{"addresses": []any{"10.252.7.1 - 10.252.7.5"}}, refuse: "without spaces"},
		{name: "no-addresses", spec: map[string]any{"addresses": []any{}}, refuse: "spec.addresses"},
		{name: "negative-priority", spec: map[string]any{"addresses": []any{"10.252.8.0/30"}, "priority": -1}, refuse: "spec.priority"},
		{name: "bad-namespace", spec: map[string]any{"addresses": []any{"10.252.9.0/30"}, "namespaces": []any{"Team_A"}}, refuse: "spec.namespaces"},
		{name: "Bad_Name", spec: map[string]any{"addresses": []any{"10.252.10.0/30"}}, refuse: "metadata.name"},
		{name: "unknown-field", spec: map[string]any{"addresses": []any{"10.252.11.0/30"}, "autoassign": true}, refuse: "autoassign"},
		{name: "bad-selector", spec: map[string]any{"addresses": []any{"10.252.12.0/30"}, "namespaceSelectors": []any{"team in (web"}}},
		{name: "host-bits", spec: map[string]any{"addresses": []any{"10.252.13.1/24"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pools.Create(ctx, poolObj(tc.name, tc.spec), metav1.CreateOptions{FieldValidation: "Strict"})
			if tc.refuse == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.refuse) {
				t.Fatalf("err = %v, want a refusal naming %q", err, tc.refuse)
			}
			if _, err := pools.Get(ctx, tc.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("a refused pool is stored: %v", err)
			}
		})
	}
	// What the apiserver stored, read back as the CCM reads it.
	for name, problem := range map[string]string{"v4-cidr": "", "dual": "", "bad-selector": `selector "team in (web"`, "host-bits": "host bits set"} {
		u, err := pools.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := poolapi.FromUnstructured(u)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.ToConfig()
		if problem == "" && err != nil || problem != "" && (err == nil || !strings.Contains(err.Error(), problem)) {
			t.Errorf("pool %s: ToConfig err = %v, want %q", name, err, problem)
		}
	}
}

// TestAddressPoolTenantRefused: a tenant (a namespace's edit rights, no
// grant on AddressPools) cannot create, edit or list a pool: the
// apiserver's RBAC refuses it, naming the resource.
func TestAddressPoolTenantRefused(t *testing.T) {
	cluster := devcluster.ForTest(t)
	installPoolCRD(t, cluster)
	kc, err := cluster.UserKubeconfig("tenant", "127.0.0.1", "tenant", "team-a")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	pools := dynamic.NewForConfigOrDie(cfg).Resource(poolapi.GVR)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = pools.Create(ctx, poolObj("mine", map[string]any{"addresses": []any{"10.252.0.0/26"}}), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "addresspools") {
		t.Errorf("tenant create: err = %v, want Forbidden naming addresspools", err)
	}
	if _, err := pools.List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("tenant list: err = %v, want Forbidden", err)
	}
	admin := dynamic.NewForConfigOrDie(cluster.RESTConfig()).Resource(poolapi.GVR)
	if l, err := admin.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("pools after the tenant's attempt: %v %v, want none", l, err)
	}
}
