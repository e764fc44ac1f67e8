// Checking a CRD file's schema against the Go types of its object.

package testkit

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// CRD names what a CRD file must declare: its group, kind, plural and
// single version, and the Go types of its spec and status (their package
// is the object's: fields of other packages' types are leaves, except
// metav1.Condition).
type CRD struct {
	File                           string
	Group, Kind, Resource, Version string
	Spec, Status                   reflect.Type
}

// CheckCRD fails t when the CRD file's names differ from c's, or its
// schema's fields differ from the Go types' JSON paths (a field the types
// lack would be stored and never read; one the schema lacks, pruned).
func CheckCRD(t *testing.T, c CRD) {
	t.Helper()
	raw, err := os.ReadFile(c.File)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Group    string
			Names    struct{ Kind, Plural string }
			Versions []struct {
				Name   string
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				}
			}
		}
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	if crd.Spec.Group != c.Group || crd.Spec.Names.Kind != c.Kind || crd.Spec.Names.Plural != c.Resource || len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != c.Version {
		t.Fatalf("the CRD names %s %s/%s %v, the Go types %s %s/%s %s", crd.Spec.Names.Kind, crd.Spec.Group, crd.Spec.Names.Plural, crd.Spec.Versions, c.Kind, c.Group, c.Resource, c.Version)
	}
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema["properties"].(map[string]any)
	for _, part := range []struct {
		name string
		typ  reflect.Type
	}{{"spec", c.Spec}, {"status", c.Status}} {
		want := goFields(part.name, part.typ, c.Spec.PkgPath())
		got := schemaFields(part.name, props[part.name].(map[string]any))
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the CRD's fields\n  %v\nthe Go types'\n  %v", part.name, got, want)
		}
	}
}

// goFields are the JSON paths of t's fields (a slice of structs as [].).
func goFields(prefix string, t reflect.Type, pkg string) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t.Kind() == reflect.Slice {
			prefix += "[]"
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() != pkg && t.Name() != "Condition" {
		return []string{prefix}
	}
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, goFields(prefix+"."+name, f.Type, pkg)...)
	}
	return out
}

// schemaFields are the JSON paths of a schema's leaves.
func schemaFields(prefix string, s map[string]any) []string {
	if items, ok := s["items"].(map[string]any); ok {
		return schemaFields(prefix+"[]", items)
	}
	props, ok := s["properties"].(map[string]any)
	if !ok {
		return []string{prefix}
	}
	var out []string
	for name, p := range props {
		out = append(out, schemaFields(prefix+"."+name, p.(map[string]any))...)
	}
	return out
}
