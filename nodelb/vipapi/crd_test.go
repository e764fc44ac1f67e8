package vipapi

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const crdFile = "../../deploy/helm/tfccm/crds/tfccm.io_nodevips.yaml"

// TestCRDMatchesTypes: every field of the Go types' spec and status is in
// the CRD's schema under its JSON name, and the schema has no field the
// types lack (the apiserver would keep a value the CCM never reads).
func TestCRDMatchesTypes(t *testing.T) {
	raw, err := os.ReadFile(crdFile)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Group    string
			Scope    string
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
	if crd.Spec.Group != Group || crd.Spec.Names.Kind != Kind || crd.Spec.Names.Plural != Resource || len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != Version {
		t.Fatalf("the CRD names %s %s/%s %v, the Go types %s %s/%s %s", crd.Spec.Names.Kind, crd.Spec.Group, crd.Spec.Names.Plural, crd.Spec.Versions, Kind, Group, Resource, Version)
	}
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema["properties"].(map[string]any)
	for _, part := range []struct {
		name string
		typ  reflect.Type
	}{{"spec", reflect.TypeFor[NodeVIPSpec]()}, {"status", reflect.TypeFor[NodeVIPStatus]()}} {
		want := goFields(part.name, part.typ)
		got := schemaFields(part.name, props[part.name].(map[string]any))
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the CRD's fields\n  %v\nthe Go types'\n  %v", part.name, got, want)
		}
	}
}

// goFields are the JSON paths of t's fields (a slice of structs as [].).
func goFields(prefix string, t reflect.Type) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t.Kind() == reflect.Slice {
			prefix += "[]"
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() != reflect.TypeFor[NodeVIP]().PkgPath() && t.Name() != "Condition" {
		return []string{prefix}
	}
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, goFields(prefix+"."+name, f.Type)...)
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
