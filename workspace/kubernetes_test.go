package workspace

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/zclconf/go-cty/cty"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func kubernetesBackendFile(suffix, kubeconfig string) []byte {
	f := hclwrite.NewEmptyFile()
	b := f.Body().AppendNewBlock("terraform", nil).Body().AppendNewBlock("backend", []string{"kubernetes"}).Body()
	for _, kv := range kubernetesAttrs(suffix, kubeconfig) {
		b.SetAttributeValue(kv.k, kv.v)
	}
	return f.Bytes()
}

type attr struct {
	k string
	v cty.Value
}

func kubernetesAttrs(suffix, kubeconfig string) []attr {
	return []attr{{"secret_suffix", cty.StringVal(suffix)}, {"config_path", cty.StringVal(kubeconfig)}, {"namespace", cty.StringVal("default")}}
}

func kubernetesBackendInfo(suffix, kubeconfig string) BackendInfo {
	b := BackendInfo{Type: "kubernetes", Attributes: map[string]cty.Value{}}
	for _, kv := range kubernetesAttrs(suffix, kubeconfig) {
		b.Attributes[kv.k] = kv.v
	}
	return b
}

func TestKubernetesBackend(t *testing.T) {
	c := devcluster.ForTest(t)
	kube := c.Client()
	ctx := context.Background()
	work := t.TempDir()

	// A controller dies mid-apply: the kubernetes backend's Lease stays.
	killMidApply(t, work, c.Kubeconfig())
	lease, err := kube.CoordinationV1().Leases("default").Get(ctx, "lock-tfstate-default-crash", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no lock Lease after the kill: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Fatal("the killed apply's lock is not held; the test proves nothing")
	}

	// The next incarnation recognises its own stale lock and finishes.
	bin, calls := countingBinary(t)
	e := newTestEngine(t, Options{Binary: bin, WorkDir: work})
	spec := crashSpec(c.Kubeconfig())
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	st := waitApplied(t, e, spec)
	if string(st.Outputs["value"]) != "1" || string(st.Outputs["password"]) != string(SensitiveValue) {
		t.Fatalf("outputs through the kubernetes backend: %v", st.Outputs)
	}
	if n := count(calls(), "force-unlock"); n != 1 {
		t.Fatalf("force-unlock ran %d times, want 1 (calls %v)", n, calls())
	}
	if _, err := kube.CoreV1().Secrets("default").Get(ctx, "tfstate-default-crash", metav1.GetOptions{}); err != nil {
		t.Fatalf("state Secret: %v", err)
	}

	// Destroy removes resources, the state Secret and the Lease.
	if _, err := e.Destroy(spec); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if st, err := e.Wait(wctx, spec.Name, spec.ContentHash()); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy: %+v, %v", st, err)
	}
	if _, err := kube.CoreV1().Secrets("default").Get(ctx, "tfstate-default-crash", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("state Secret after destroy: %v", err)
	}
	if _, err := kube.CoordinationV1().Leases("default").Get(ctx, "lock-tfstate-default-crash", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("lock Lease after destroy: %v", err)
	}
}
