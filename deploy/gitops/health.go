// Package gitops evaluates the Argo CD and Flux health checks for Services
// shipped in this directory the way Argo CD and kustomize-controller do.
// It runs the Lua script (argocd-service-health.lua) in a Lua interpreter
// with the object as obj, and the CEL expressions
// (flux-service-health.yaml) with cel-go over the object's top-level
// fields. The tests here run them on fixtures, test/e2e on Services a
// running CCM wrote.
package gitops

import (
	_ "embed"
	"fmt"

	"github.com/google/cel-go/cel"
	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"
)

//go:embed argocd-service-health.lua
var argoScript string

//go:embed flux-service-health.yaml
var fluxKustomization []byte

// ArgoCDHealth runs the Argo CD health check on obj (an unstructured
// Service) and returns its status (Healthy, Progressing, Degraded) and
// message.
func ArgoCDHealth(obj map[string]any) (status, message string, err error) {
	L := lua.NewState()
	defer L.Close()
	v, err := toLua(L, obj)
	if err != nil {
		return "", "", err
	}
	L.SetGlobal("obj", v)
	if err := L.DoString(argoScript); err != nil {
		return "", "", fmt.Errorf("argocd-service-health.lua: %w", err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", fmt.Errorf("argocd-service-health.lua returned %s, not a table", L.Get(-1).Type())
	}
	return lua.LVAsString(hs.RawGetString("status")), lua.LVAsString(hs.RawGetString("message")), nil
}

// toLua converts an unstructured value into Lua values the way Argo CD
// does: objects and arrays become tables (arrays 1-based).
func toLua(L *lua.LState, v any) (lua.LValue, error) {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			lv, err := toLua(L, e)
			if err != nil {
				return nil, err
			}
			t.RawSetString(k, lv)
		}
		return t, nil
	case []any:
		t := L.NewTable()
		for _, e := range v {
			lv, err := toLua(L, e)
			if err != nil {
				return nil, err
			}
			t.Append(lv)
		}
		return t, nil
	case string:
		return lua.LString(v), nil
	case bool:
		return lua.LBool(v), nil
	case int64:
		return lua.LNumber(v), nil
	case float64:
		return lua.LNumber(v), nil
	case nil:
		return lua.LNil, nil
	}
	return nil, fmt.Errorf("unexpected value of type %T", v)
}

// FluxCheck is the compiled healthCheckExprs entry of
// flux-service-health.yaml for v1 Service.
type FluxCheck struct {
	progs map[string]cel.Program // by status: InProgress, Failed, Current
}

// NewFluxCheck compiles the expressions of flux-service-health.yaml.
func NewFluxCheck() (*FluxCheck, error) {
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
	if err := yaml.Unmarshal(fluxKustomization, &ks); err != nil {
		return nil, fmt.Errorf("flux-service-health.yaml: %w", err)
	}
	exprs := ks.Spec.HealthCheckExprs
	if len(exprs) != 1 || exprs[0].Kind != "Service" || exprs[0].APIVersion != "v1" {
		return nil, fmt.Errorf("flux-service-health.yaml: healthCheckExprs %+v, want one for v1 Service", exprs)
	}
	env, err := cel.NewEnv(cel.OptionalTypes(),
		cel.Variable("apiVersion", cel.DynType), cel.Variable("kind", cel.DynType),
		cel.Variable("metadata", cel.DynType), cel.Variable("spec", cel.DynType), cel.Variable("status", cel.DynType))
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	f := &FluxCheck{progs: map[string]cel.Program{}}
	for status, expr := range map[string]string{"InProgress": exprs[0].InProgress, "Failed": exprs[0].Failed, "Current": exprs[0].Current} {
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			return nil, fmt.Errorf("flux-service-health.yaml %s: %w", status, iss.Err())
		}
		if f.progs[status], err = env.Program(ast); err != nil {
			return nil, fmt.Errorf("flux-service-health.yaml %s: %w", status, err)
		}
	}
	return f, nil
}

// Status evaluates the expressions on obj (an unstructured Service) and
// returns the kstatus Flux reports: the one that holds, InProgress when
// none does. Two holding at once is an error: Flux's order of evaluation
// would then decide.
func (f *FluxCheck) Status(obj map[string]any) (string, error) {
	var held []string
	for _, status := range []string{"InProgress", "Failed", "Current"} {
		v, _, err := f.progs[status].Eval(obj)
		if err != nil {
			return "", fmt.Errorf("flux %s: %w", status, err)
		}
		if v.Value() == true {
			held = append(held, status)
		}
	}
	switch len(held) {
	case 0:
		return "InProgress", nil
	case 1:
		return held[0], nil
	}
	return "", fmt.Errorf("flux expressions %v all hold", held)
}
