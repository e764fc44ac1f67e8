package devcluster

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var metav1GetOptions = metav1.GetOptions{}

// ForTest starts a control plane in a temporary directory and stops it when
// the test ends. It fails the test when the tools are missing: run
// `make tools` first (make test does). With -short (make unit) the test is
// skipped.
func ForTest(t testing.TB) *Cluster {
	t.Helper()
	return ForTestWith(t, Options{})
}

// ForTestWith is ForTest with options (Dir is the test's temporary
// directory when unset).
func ForTestWith(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane: not with -short")
	}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("start control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	return c
}
