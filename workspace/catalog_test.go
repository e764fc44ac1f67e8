package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/workspace/backends"
)

// catalogMarkerModule's destroy appends the workspace's name to a file
// (%s): the destroy really ran, not only the removal of its state.
const catalogMarkerModule = `resource "terraform_data" "lb" {
  input = "lb-catalogued"
  provisioner "local-exec" {
    when    = destroy
    command = "echo \"${self.input}\" >> '%s'"
  }
}
`

// TestCatalogDestroyFromEntry: a controller whose work dir is empty (a new
// pod) destroys a workspace from the kubernetes backend's catalog alone
// (outside review mode): tofu destroy runs in the directory rendered from
// the entry — the module's destroy provisioner writes its marker — and the
// state Secret and the catalog entry go. The orphan sweep of a new pod
// depends on exactly this (TestOrphanFromStateBackend in test/e2e).
func TestCatalogDestroyFromEntry(t *testing.T) {
	c := devcluster.ForTest(t)
	kube := c.Client()
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "destroyed")
	suffix := fmt.Sprintf("lb-catalogued-%d", time.Now().UnixNano())
	cat := &Spec{Name: backends.CatalogName, Files: map[string][]byte{"backend.tf": kubernetesBackendFile("tfccm-catalog", c.Kubeconfig())},
		Backend: kubernetesBackendInfo("tfccm-catalog", c.Kubeconfig())}
	spec := Spec{Name: "lb-catalogued", Files: map[string][]byte{
		"main.tf":    fmt.Appendf(nil, catalogMarkerModule, marker),
		"backend.tf": kubernetesBackendFile(suffix, c.Kubeconfig()),
	}, Backend: kubernetesBackendInfo(suffix, c.Kubeconfig()),
		Owner: &Owner{Namespace: "default", Name: "web", UID: "6d1f7e0a-catalog-owner"}}
	spec.Hash = spec.ContentHash()
	t.Cleanup(func() {
		// The catalog's entries of other runs must not pile up.
		_ = kube.CoreV1().Secrets("default").Delete(ctx, "tfstate-lb-catalogued-tfccm-catalog", metav1.DeleteOptions{})
		_ = kube.CoreV1().Secrets("default").Delete(ctx, "tfstate-default-"+suffix, metav1.DeleteOptions{})
	})

	e1, stop1 := stoppableEngine(t, Options{WorkDir: t.TempDir(), Catalog: cat})
	if _, err := e1.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e1, spec)
	stop1()
	if _, err := kube.CoreV1().Secrets("default").Get(ctx, "tfstate-default-"+suffix, metav1.GetOptions{}); err != nil {
		t.Fatalf("no state Secret after the apply: %v", err)
	}

	// A new controller, its work dir empty, not in review mode.
	e2, _ := stoppableEngine(t, Options{WorkDir: t.TempDir(), Catalog: cat})
	names, err := e2.Catalogued(ctx)
	if err != nil || !strings.Contains(strings.Join(names, ","), spec.Name) {
		t.Fatalf("catalog lists %v, %v; want %s", names, err, spec.Name)
	}
	entry, err := e2.CatalogEntry(ctx, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if entry.Owner != *spec.Owner || entry.Hash != spec.Hash {
		t.Fatalf("catalog entry %+v does not match the applied workspace", entry)
	}
	// What the orphan sweep does (templates.WithBackend sets the backend
	// the controller renders for the name).
	orphan := entry.Spec()
	orphan.Backend = kubernetesBackendInfo(suffix, c.Kubeconfig())
	orphan.Hash = orphan.ContentHash()
	if _, err := e2.Destroy(orphan); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if st, err := e2.Wait(wctx, orphan.Name, orphan.Hash); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy from the catalog entry: %+v, %v", st, err)
	}
	if b, err := os.ReadFile(marker); err != nil || strings.TrimSpace(string(b)) != "lb-catalogued" {
		t.Fatalf("the destroy provisioner did not run (marker %q, %v): the state was removed without a destroy", b, err)
	}
	if _, err := kube.CoreV1().Secrets("default").Get(ctx, "tfstate-default-"+suffix, metav1.GetOptions{}); err == nil {
		t.Error("the state Secret is still there after the destroy")
	}
	if names, err := e2.Catalogued(ctx); err != nil || strings.Contains(strings.Join(names, ","), spec.Name) {
		t.Errorf("catalog after the destroy lists %v, %v; want no %s", names, err, spec.Name)
	}
}
