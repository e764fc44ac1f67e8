package ccm

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tfccm/tfccm/annotations"
)

// TestIncarnations: each leader records its lock owner; a later leader
// treats exactly the earlier ones as gone.
func TestIncarnations(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	first := newIncarnations("root@pod-a")
	if err := first.record(ctx, client, "tfccm"); err != nil {
		t.Fatal(err)
	}
	if first.gone("root@pod-a") || first.gone("root@pod-b") {
		t.Fatal("the first leader treats itself or an unknown holder as gone")
	}
	second := newIncarnations("root@pod-b")
	if err := second.record(ctx, client, "tfccm"); err != nil {
		t.Fatal(err)
	}
	for who, want := range map[string]bool{"root@pod-a": true, "root@pod-b": false, "alice@laptop": false, "": false} {
		if got := second.gone(who); got != want {
			t.Errorf("gone(%q) = %v, want %v", who, got, want)
		}
	}
	cm, err := client.CoreV1().ConfigMaps("tfccm").Get(ctx, annotations.Incarnations, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Data[incarnationsKey]; !strings.Contains(got, "root@pod-a\t") || !strings.Contains(got, "root@pod-b\t") {
		t.Errorf("ConfigMap data %q", got)
	}
	many := map[string]string{}
	for i := range maxIncarnations + 10 {
		many[strings.Repeat("x", i+1)+"@h"] = "2026-01-01T00:00:00Z"
	}
	if n := strings.Count(formatIncarnations(many), "\n"); n != maxIncarnations {
		t.Errorf("%d entries kept, want %d", n, maxIncarnations)
	}
}
