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
	"k8s.io/component-base/metrics/testutil"

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/workspace/backends"
	"github.com/tfccm/tfccm/workspace/tofu"
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

// TestCatalogNotRewrittenOnHandOver: a new leader (a second engine, its
// work dir empty, on the same kubernetes backend) that applies a workspace
// the catalog already holds at that hash reads the entry and writes
// nothing; the entry keeps the first leader's applied time. A changed
// spec is still written, once. The catalog's writes are counted by the
// engine's state_push metric and seen on the entry's state Secret.
func TestCatalogNotRewrittenOnHandOver(t *testing.T) {
	c := devcluster.ForTest(t)
	kube := c.Client()
	ctx := context.Background()
	n := time.Now().UnixNano() % 1_000_000_000
	name, suffix := fmt.Sprintf("lb-handover-%d", n), fmt.Sprintf("handover-%d", n)
	entrySecret := "tfstate-" + name + "-tfccm-catalog"
	cat := &Spec{Name: backends.CatalogName, Files: map[string][]byte{"backend.tf": kubernetesBackendFile("tfccm-catalog", c.Kubeconfig())},
		Backend: kubernetesBackendInfo("tfccm-catalog", c.Kubeconfig())}
	spec := Spec{Name: name, Files: map[string][]byte{
		"main.tf":    []byte("resource \"terraform_data\" \"lb\" {\n  input = \"handover\"\n}\n"),
		"backend.tf": kubernetesBackendFile(suffix, c.Kubeconfig()),
	}, Backend: kubernetesBackendInfo(suffix, c.Kubeconfig()),
		Owner: &Owner{Namespace: "default", Name: "web", UID: "0b7c2f4e-handover-owner"}}
	spec.Hash = spec.ContentHash()
	t.Cleanup(func() {
		_ = kube.CoreV1().Secrets("default").Delete(ctx, entrySecret, metav1.DeleteOptions{})
		_ = kube.CoreV1().Secrets("default").Delete(ctx, "tfstate-default-"+suffix, metav1.DeleteOptions{})
	})
	// version is the entry Secret's resourceVersion ("" while there is
	// none): every write of the entry changes it.
	version := func() string {
		s, err := kube.CoreV1().Secrets("default").Get(ctx, entrySecret, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return s.ResourceVersion
	}
	// pushes counts the engines' state pushes (the catalog's writes: the
	// workspaces here never leave an errored.tfstate to push).
	pushes := func() float64 {
		v, _ := testutil.GetCounterMetricValue(operationsTotal.WithLabelValues("state_push", tofu.ResultSuccess))
		return v
	}

	e1, stop1 := stoppableEngine(t, Options{WorkDir: t.TempDir(), Catalog: cat})
	if _, err := e1.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e1, spec)
	first, err := e1.CatalogEntry(ctx, name)
	if err != nil || first.Hash != spec.Hash {
		t.Fatalf("catalog entry after the first apply: hash %s (%v); want %s", first.Hash, err, spec.Hash)
	}
	stop1()
	v1, p1 := version(), pushes()
	if v1 == "" || p1 == 0 {
		t.Fatalf("the first leader's apply wrote no catalog entry (Secret version %q, %v pushes)", v1, p1)
	}

	// The hand-over: a new leader, its work dir empty, applies the same spec.
	e2, _ := stoppableEngine(t, Options{WorkDir: t.TempDir(), Catalog: cat})
	if _, err := e2.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e2, spec)
	if v, p := version(), pushes(); v != v1 || p != p1 {
		t.Errorf("the new leader wrote the unchanged catalog entry again: %v pushes after the hand-over (want 0), Secret version %s -> %s", p-p1, v1, v)
	}
	got, err := e2.CatalogEntry(ctx, name)
	if err != nil || got.Hash != spec.Hash || !got.AppliedAt.Equal(first.AppliedAt) {
		t.Errorf("catalog entry after the hand-over: hash %s applied at %s (%v); want the first leader's (%s at %s)", got.Hash, got.AppliedAt, err, spec.Hash, first.AppliedAt)
	}
	rec, err := readRecord(e2.Dir(name))
	if err != nil || rec.Catalogued != spec.Hash {
		t.Errorf("the new leader's record says catalogued %q (%v); want %s", rec.Catalogued, err, spec.Hash)
	}

	// A changed spec is written.
	changed := spec
	changed.Files = map[string][]byte{"main.tf": []byte("resource \"terraform_data\" \"lb\" {\n  input = \"handover-2\"\n}\n"), "backend.tf": spec.Files["backend.tf"]}
	changed.Hash = changed.ContentHash()
	if _, err := e2.Apply(changed); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e2, changed)
	if got, err := e2.CatalogEntry(ctx, name); err != nil || got.Hash != changed.Hash {
		t.Errorf("catalog entry after a change: hash %s (%v); want %s", got.Hash, err, changed.Hash)
	}
	if v, p := version(), pushes(); v == v1 || p != p1+1 {
		t.Errorf("the changed spec's entry: %v pushes (want 1), Secret version %s -> %s", p-p1, v1, v)
	}
	if _, err := e2.Destroy(changed); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if st, err := e2.Wait(wctx, name, changed.Hash); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy: %+v, %v", st, err)
	}
}
