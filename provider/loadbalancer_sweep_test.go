package provider

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

	if n, err := l.sweep(now); err != nil || n != 0 || len(eng.destroys) != 0 {
		t.Fatalf("before sync: %d destroyed, %v", n, err)
	}
	synced = true
	n, err := l.sweep(now)
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
