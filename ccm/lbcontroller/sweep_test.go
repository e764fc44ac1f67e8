package lbcontroller

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tfccm/tfccm/workspace"
)

// TestSweepDestroysOnlyOrphans: the sweep destroys the workspace of a
// Service that no longer exists, and never one whose Service exists (of
// any type), one written moments ago, one already being destroyed, or a
// directory that is not a load balancer workspace; nothing at all before
// the Service informer has synced.
func TestSweepDestroysOnlyOrphans(t *testing.T) {
	now := time.Now()
	old := now.Add(-time.Hour)
	live := phaseService()
	clusterIP := phaseService()
	clusterIP.Name, clusterIP.UID, clusterIP.Spec.Type = "was-lb", "u-cip", corev1.ServiceTypeClusterIP
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, s := range []*corev1.Service{live, clusterIP} {
		_ = idx.Add(s)
	}
	written := &workspace.Spec{Name: "lb-c-gone", Files: map[string][]byte{"main.tf": []byte("# gone")}}
	eng := &fakeLBEngine{written: written, dirs: []workspace.WorkspaceDir{
		{Name: "lb-c-u1", ModTime: old},    // live Service
		{Name: "lb-c-u-cip", ModTime: old}, // Service exists, no longer a LoadBalancer
		{Name: "lb-c-gone", ModTime: old},  // orphan
		{Name: "lb-c-new", ModTime: now},   // just written
		{Name: "routes", ModTime: old},     // not a load balancer workspace
	}}
	l, _ := newPhaseTest(eng, fakeRenderer{})
	synced := false
	l.svcSource = &serviceSource{lister: corelisters.NewServiceLister(idx), synced: func() bool { return synced }}

	if n, _, err := l.sweep(t.Context(), now); err != nil || n != 0 || len(eng.destroys) != 0 {
		t.Fatalf("before sync: %d destroyed, %v", n, err)
	}
	synced = true
	n, again, err := l.sweep(t.Context(), now)
	if again <= 0 || again > orphanMinAge+time.Second {
		t.Errorf("the workspace written just now is swept again in %s, want within %s", again, orphanMinAge)
	}
	if err != nil || n != 1 || len(eng.destroys) != 1 || eng.destroys[0].Name != "lb-c-gone" {
		t.Fatalf("sweep destroyed %d (%v): %+v", n, err, eng.destroys)
	}
	if eng.destroys[0].Backend.Type != "local" || !strings.Contains(string(eng.destroys[0].Files["main.tf"]), "gone") {
		t.Errorf("orphan destroyed with spec %+v", eng.destroys[0])
	}
	if err := l.UpdateLoadBalancer(t.Context(), "c", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "x", UID: "gone"}}, nil); err != nil {
		t.Fatal(err)
	}
	if len(eng.applied) != 0 {
		t.Error("an orphan's workspace was applied after the sweep destroyed it")
	}
}

// TestSweepDestroysOrphansFromTheBackend: with an empty work dir, the
// sweep destroys a workspace the state backend's catalog lists whose
// Service is gone, with the files the catalog kept, and records the gone
// Service as its owner; never one whose Service exists (by workspace or
// by UID) or one applied moments ago.
func TestSweepDestroysOrphansFromTheBackend(t *testing.T) {
	now := time.Now()
	old := now.Add(-time.Hour)
	live := phaseService()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = idx.Add(live)
	entry := func(name, uid string, at time.Time) workspace.CatalogEntry {
		return workspace.CatalogEntry{Name: name, Owner: workspace.Owner{Namespace: "shop", Name: "web-" + uid, UID: uid}, AppliedAt: at,
			Files: map[string][]byte{"main.tf": []byte("# " + name)}}
	}
	eng := &fakeLBEngine{catalog: map[string]workspace.CatalogEntry{
		"lb-c-u1":      entry("lb-c-u1", "u1", old),      // live Service
		"lb-c-renamed": entry("lb-c-renamed", "u1", old), // live Service's UID
		"lb-c-gone":    entry("lb-c-gone", "gone", old),  // orphan
		"lb-c-new":     entry("lb-c-new", "new", now),    // just applied
		"routes":       entry("routes", "", old),         // not a load balancer workspace
	}}
	l, _ := newPhaseTest(eng, fakeRenderer{})
	l.svcSource = &serviceSource{lister: corelisters.NewServiceLister(idx), synced: func() bool { return true }}
	n, again, err := l.sweep(t.Context(), now)
	if err != nil || n != 1 || len(eng.destroys) != 1 || eng.destroys[0].Name != "lb-c-gone" {
		t.Fatalf("sweep destroyed %d (%v): %+v", n, err, eng.destroys)
	}
	if again <= 0 || again > catalogMinAge+time.Second {
		t.Errorf("the entry applied just now is swept again in %s, want within %s", again, catalogMinAge)
	}
	d := eng.destroys[0]
	if d.Backend.Type != "local" || string(d.Files["main.tf"]) != "# lb-c-gone" || d.Hash != d.ContentHash() {
		t.Errorf("orphan destroyed with spec %+v", d)
	}
	if svc := l.serviceOf("lb-c-gone"); svc == nil || svc.Namespace != "shop" || svc.Name != "web-gone" || svc.UID != "gone" {
		t.Errorf("the orphan's results go to %+v, want the gone Service shop/web-gone", svc)
	}
	// A second sweep does not destroy it again.
	if n, _, err := l.sweep(t.Context(), now); err != nil || n != 0 {
		t.Fatalf("second sweep destroyed %d (%v)", n, err)
	}
}
