// Package gitops_test checks the Argo CD and Flux health checks for
// Services shipped in this directory against Service fixtures.
package gitops_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/tfccm/tfccm/internal/manifest"
)

// want is a fixture's expected health: Argo CD's status and a part of its
// message, and the Flux (kstatus) status.
type want struct {
	argo, message, flux string
}

var fixtures = map[string]want{
	"clusterip":         {"Healthy", "", "Current"},
	"new":               {"Progressing", "Waiting for the load balancer", "InProgress"},
	"awaiting-approval": {"Progressing", "plan 3f1c2d (1 to add, 0 to change, 0 to destroy) awaits approval", "InProgress"},
	"window-closed":     {"Progressing", "next window opens at 2026-11-25T21:00:00Z", "InProgress"},
	"applying":          {"Progressing", "applying the plan: 3 to add", "InProgress"},
	"applied":           {"Healthy", "runs the Service", "Current"},
	"apply-failed":      {"Degraded", "quota exceeded", "Failed"},
	"policy-denied":     {"Degraded", "policy at-most-2-destroys", "Failed"},
	"refused":           {"Degraded", "forward TCP only", "Failed"},
	"stale":             {"Progressing", "has not acted on generation 2", "InProgress"},
	"other-class":       {"Healthy", "", "Current"},
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
	script, err := os.ReadFile("argocd-service-health.lua")
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range fixtures {
		t.Run(name, func(t *testing.T) {
			L := lua.NewState()
			defer L.Close()
			L.SetGlobal("obj", toLua(L, service(t, name)))
			if err := L.DoString(string(script)); err != nil {
				t.Fatal(err)
			}
			hs, ok := L.Get(-1).(*lua.LTable)
			if !ok {
				t.Fatalf("the script returned %s, not a table", L.Get(-1).Type())
			}
			status, message := lua.LVAsString(hs.RawGetString("status")), lua.LVAsString(hs.RawGetString("message"))
			if status != w.argo || !strings.Contains(message, w.message) {
				t.Errorf("health %s %q, want %s containing %q", status, message, w.argo, w.message)
			}
		})
	}
}

// toLua converts an unstructured value into Lua values the way Argo CD
// does: objects and arrays become tables (arrays 1-based).
func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range v {
			t.Append(toLua(L, e))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case nil:
		return lua.LNil
	}
	panic("unexpected value type")
}

// TestFluxHealth evaluates the healthCheckExprs of flux-service-health.yaml
// with cel-go on each fixture, the object's fields as top-level variables
// as kustomize-controller passes them. At most one expression holds for a
// fixture, so the order Flux evaluates them in does not matter; none
// means InProgress.
func TestFluxHealth(t *testing.T) {
	src, err := os.ReadFile("flux-service-health.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ks struct {
		Spec struct {
			HealthCheckExprs []struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				InProgress string `json:"inProgress"`
				Failed     string `json:"failed"`
				Current    string `json:"current"`
			} `json:"healthCheckExprs"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(src, &ks); err != nil {
		t.Fatal(err)
	}
	if len(ks.Spec.HealthCheckExprs) != 1 || ks.Spec.HealthCheckExprs[0].Kind != "Service" || ks.Spec.HealthCheckExprs[0].APIVersion != "v1" {
		t.Fatalf("healthCheckExprs %+v", ks.Spec.HealthCheckExprs)
	}
	e := ks.Spec.HealthCheckExprs[0]
	env, err := cel.NewEnv(cel.OptionalTypes(),
		cel.Variable("apiVersion", cel.DynType), cel.Variable("kind", cel.DynType),
		cel.Variable("metadata", cel.DynType), cel.Variable("spec", cel.DynType), cel.Variable("status", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	progs := map[string]cel.Program{}
	for status, expr := range map[string]string{"InProgress": e.InProgress, "Failed": e.Failed, "Current": e.Current} {
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			t.Fatalf("%s: %v", status, iss.Err())
		}
		if progs[status], err = env.Program(ast); err != nil {
			t.Fatal(err)
		}
	}
	for name, w := range fixtures {
		t.Run(name, func(t *testing.T) {
			obj := service(t, name)
			var held []string
			for status, p := range progs {
				v, _, err := p.Eval(obj)
				if err != nil {
					t.Fatalf("%s: %v", status, err)
				}
				if v.Value() == true {
					held = append(held, status)
				}
			}
			got := "InProgress"
			switch len(held) {
			case 0:
			case 1:
				got = held[0]
			default:
				t.Fatalf("expressions %v all hold", held)
			}
			if got != w.flux {
				t.Errorf("status %s, want %s", got, w.flux)
			}
		})
	}
}
