package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/testkit"
)

// TestReferenceUpToDate fails when docs/configuration.md is not what the
// declarations generate; go generate ./config (-update) rewrites it.
func TestReferenceUpToDate(t *testing.T) {
	testkit.Golden(t, filepath.Join("..", "docs", "configuration.md"), []byte(Reference()))
}

// TestEverySettingDocumented: each setting gohcl decodes has a doc tag
// (the reference would show an empty description otherwise), and each
// duration setting is one of the durations table's.
func TestEverySettingDocumented(t *testing.T) {
	var walk func(typ reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, kind, ok := hclTag(f)
			if !ok {
				continue
			}
			if f.Tag.Get("doc") == "" {
				t.Errorf("%s%s has no doc tag", path, name)
			}
			if strings.HasSuffix(f.Name, "Raw") {
				if _, ok := durationSetting(strings.TrimSuffix(path, "."), name); !ok {
					t.Errorf("%s%s is not in the durations table", path, name)
				}
			}
			if kind == "block" {
				elem := f.Type
				for elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Slice {
					elem = elem.Elem()
				}
				walk(elem, path+name+".")
			}
		}
	}
	walk(reflect.TypeOf(Config{}), "")
}
