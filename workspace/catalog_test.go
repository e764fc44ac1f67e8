package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// TestCatalogWritesArePushes: with the kubernetes backend (whose
// workspace listing reads every state Secret), writing a new entry is one
// `tofu state push` and nothing else: the names are listed once per
// process, the entry's workspace is chosen without tofu listing them
// again, and the backend creates its state. Entries finishing at once are
// written at once, each in a catalog directory of its own. A name another
// controller removed meanwhile is written again; removing one is one
// `workspace delete`.
func TestCatalogWritesArePushes(t *testing.T) {
	c := devcluster.ForTest(t)
	kube := c.Client()
	ctx := context.Background()
	run := time.Now().UnixNano() % 1_000_000_000
	cat := &Spec{Name: backends.CatalogName, Files: map[string][]byte{"backend.tf": kubernetesBackendFile("tfccm-catalog", c.Kubeconfig())},
		Backend: kubernetesBackendInfo("tfccm-catalog", c.Kubeconfig())}
	names := make([]string, 8)
	for i := range names {
		names[i] = fmt.Sprintf("lb-push-%d-%d", run, i)
	}
	t.Cleanup(func() {
		for _, n := range names {
			_ = kube.CoreV1().Secrets("default").Delete(ctx, "tfstate-"+n+"-tfccm-catalog", metav1.DeleteOptions{})
		}
	})
	ops := func(op string) float64 {
		v, _ := testutil.GetCounterMetricValue(operationsTotal.WithLabelValues(op, tofu.ResultSuccess))
		return v
	}
	type counts struct{ workspace, push, pull, init float64 }
	now := func() counts { return counts{ops("workspace"), ops("state_push"), ops("state_pull"), ops("init")} }
	since := func(a counts) counts {
		b := now()
		return counts{b.workspace - a.workspace, b.push - a.push, b.pull - a.pull, b.init - a.init}
	}
	entry := func(name string) []byte { return []byte(`{"name":"` + name + `"}`) }
	same := func(name string) func([]byte) bool {
		return func(old []byte) bool { return string(old) == string(entry(name)) }
	}

	work := t.TempDir()
	e, stop := stoppableEngine(t, Options{WorkDir: work, Catalog: cat, Parallelism: 4})
	store := e.catalog.store
	before := now()
	if wrote, err := store.Put(ctx, names[0], entry(names[0]), same(names[0])); err != nil || !wrote {
		t.Fatalf("first Put: wrote %v, %v", wrote, err)
	}
	if got := since(before); got.workspace != 1 || got.push != 1 || got.pull != 0 {
		t.Errorf("first new entry ran %+v; want the one listing of the process and one push", got)
	}
	before = now()
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i := 1; i < len(names); i++ {
		wg.Go(func() {
			wrote, err := store.Put(ctx, names[i], entry(names[i]), same(names[i]))
			if err == nil && !wrote {
				err = fmt.Errorf("not written")
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Put %s: %v", names[i], err)
		}
	}
	got := since(before)
	if got.workspace != 0 || got.pull != 0 || got.push != float64(len(names)-1) {
		t.Errorf("%d new entries ran %+v; want %d pushes and no workspace command or read", len(names)-1, got, len(names)-1)
	}
	if got.init < 1 || got.init > 3 {
		t.Errorf("%v inits for concurrent writes; want 1 to 3 (a directory each beyond the first, at most 4 in all)", got.init)
	}

	listed, err := store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !slices.Contains(listed, n) {
			t.Errorf("the catalog lists %v; want %s", listed, n)
		}
		if b, err := store.Get(ctx, n); err != nil || string(b) != string(entry(n)) {
			t.Errorf("Get %s: %q, %v", n, b, err)
		}
	}

	// The same entry again: read, not written.
	before = now()
	if wrote, err := store.Put(ctx, names[1], entry(names[1]), same(names[1])); err != nil || wrote {
		t.Errorf("Put of an unchanged entry: wrote %v, %v; want a read and no write", wrote, err)
	}
	if got := since(before); got.push != 0 || got.pull != 1 || got.workspace != 0 {
		t.Errorf("unchanged entry ran %+v; want one read", got)
	}

	// Another controller removes an entry this one holds: this one's next
	// write of it finds it gone and writes it again.
	e2, _ := stoppableEngine(t, Options{WorkDir: t.TempDir(), Catalog: cat})
	if err := e2.catalog.store.Remove(ctx, names[2]); err != nil {
		t.Fatal(err)
	}
	if wrote, err := store.Put(ctx, names[2], entry(names[2]), same(names[2])); err != nil || !wrote {
		t.Errorf("Put after another controller removed the entry: wrote %v, %v", wrote, err)
	}
	if b, err := e2.catalog.store.Get(ctx, names[2]); err != nil || string(b) != string(entry(names[2])) {
		t.Errorf("the entry written again reads %q, %v", b, err)
	}

	// Removing: one workspace command.
	before = now()
	if err := store.Remove(ctx, names[3]); err != nil {
		t.Fatal(err)
	}
	if got := since(before); got.workspace != 1 {
		t.Errorf("Remove ran %+v; want one workspace command (the delete)", got)
	}
	if err := store.Remove(ctx, names[3]); err != nil {
		t.Errorf("removing a removed entry: %v", err)
	}
	if listed, err := store.List(ctx); err != nil || slices.Contains(listed, names[3]) {
		t.Errorf("after Remove the catalog lists %v, %v", listed, err)
	}

	// A restarted controller on the same work dir, whose catalog
	// directories select entries another controller removed meanwhile.
	stop()
	dirs, _ := filepath.Glob(filepath.Join(work, backends.CatalogDir+"*", ".terraform", "environment"))
	gone := 0
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil || string(b) == "default" {
			continue
		}
		if err := e2.catalog.store.Remove(ctx, string(b)); err != nil {
			t.Fatal(err)
		}
		gone++
	}
	if gone == 0 {
		t.Fatalf("no catalog directory of %v selects an entry", dirs)
	}
	e3, _ := stoppableEngine(t, Options{WorkDir: work, Catalog: cat, Parallelism: 4})
	again := append(entry(names[5]), " again"...)
	if wrote, err := e3.catalog.store.Put(ctx, names[5], again, func(old []byte) bool { return string(old) == string(again) }); err != nil || !wrote {
		t.Errorf("Put by a restarted controller whose directories selected removed entries: wrote %v, %v", wrote, err)
	}
}
