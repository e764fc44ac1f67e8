package gitops

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tfccm/tfccm/internal/manifest"
)

// want is a fixture's expected health: Argo CD's status and a part of its
// message, and the Flux (kstatus) status.
type want struct {
	argo, message, flux string
}

// The fixtures carry what tfccm writes: its conditions without an
// observedGeneration, Services without a metadata.generation.
var fixtures = map[string]want{
	"clusterip":          {"Healthy", "", "Current"},
	"new":                {"Progressing", "Waiting for the load balancer", "InProgress"},
	"awaiting-approval":  {"Progressing", "plan 3f1c2d (1 to add, 0 to change, 0 to destroy) awaits approval", "InProgress"},
	"window-closed":      {"Progressing", "next window opens at 2026-11-25T21:00:00Z", "InProgress"},
	"applying":           {"Progressing", "applying the plan: 3 to add", "InProgress"},
	"edit-in-flight":     {"Progressing", "the Service's workspace is being planned and applied", "InProgress"},
	"plan-stale":         {"Progressing", "the state changed since the plan was made", "InProgress"},
	"applied":            {"Healthy", "runs the Service", "Current"},
	"applied-no-address": {"Progressing", "waiting for the address to be published", "InProgress"},
	"drift-repaired":     {"Healthy", "re-applied", "Current"},
	"apply-failed":       {"Degraded", "quota exceeded", "Failed"},
	"policy-denied":      {"Degraded", "policy at-most-2-destroys", "Failed"},
	"refused":            {"Degraded", "forward TCP only", "Failed"},
	"edit-refused":       {"Degraded", "annotation tfccm.io/vars", "Failed"},
	"other-class":        {"Healthy", "", "Current"},
}

// service reads a fixture as the unstructured object Argo CD and Flux see.
func service(t *testing.T, name string) map[string]any {
	t.Helper()
	svc, err := manifest.ReadService(filepath.Join("testdata", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(svc)
	if err != nil {
		t.Fatal(err)
	}
	obj["apiVersion"], obj["kind"] = "v1", "Service"
	return obj
}

func TestFixturesCovered(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if len(files) != len(fixtures) {
		t.Fatalf("%d fixtures, %d expectations", len(files), len(fixtures))
	}
}

// TestArgoCDHealth runs argocd-service-health.lua in a Lua interpreter
// with each fixture as obj, as Argo CD runs a resource customization.
func TestArgoCDHealth(t *testing.T) {
	for name, w := range fixtures {
		t.Run(name, func(t *testing.T) {
			status, message, err := ArgoCDHealth(service(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if status != w.argo || !strings.Contains(message, w.message) {
				t.Errorf("health %s %q, want %s containing %q", status, message, w.argo, w.message)
			}
		})
	}
}

// TestFluxHealth evaluates the healthCheckExprs of flux-service-health.yaml
// with cel-go on each fixture, the object's fields as top-level variables
// as kustomize-controller passes them. At most one expression holds for a
// fixture, so the order Flux evaluates them in does not matter; none
// means InProgress.
func TestFluxHealth(t *testing.T) {
	check, err := NewFluxCheck()
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range fixtures {
		t.Run(name, func(t *testing.T) {
			got, err := check.Status(service(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if got != w.flux {
				t.Errorf("status %s, want %s", got, w.flux)
			}
		})
	}
}
