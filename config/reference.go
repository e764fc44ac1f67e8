package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
)

// The generated configuration reference (docs/configuration.md), written
// from the settings' declarations and the defaults Parse fills in.

// Reference renders docs/configuration.md from the declarations: every
// setting's name, type and documentation come from the struct fields' hcl
// and doc tags, its default from what Parse fills in for a config that
// only names the cluster, and a duration's rules from durations.go.
func Reference() string {
	def, err := Parse([]byte(`cluster_name = "x"`), "defaults.hcl")
	if err != nil {
		panic("config: the minimal config does not parse: " + err.Error())
	}
	var b strings.Builder
	b.WriteString("# Cloud config reference\n\n")
	b.WriteString("Generated from the declarations in package `config`; do not edit by hand\n")
	b.WriteString("(`go generate ./config`). The cloud config is one HCL file passed to the CCM with\n")
	b.WriteString("`--cloud-config`; every mistake is reported with its file and line, and the CCM does not start.\n")
	b.WriteString("Durations are Go durations such as `\"30s\"`, `\"10m\"` or `\"1h\"`. An example for an in-cluster\n")
	b.WriteString("deployment: `deploy/base/cloud.hcl`.\n")
	writeBlock(&b, "Top level", "", "", reflect.ValueOf(def).Elem())
	writeBaremetalValues(&b)
	return b.String()
}

// writeBaremetalValues writes the section of baremetal_values_file's keys:
// the Helm chart's typed baremetal values and the setting each becomes.
func writeBaremetalValues(b *strings.Builder) {
	b.WriteString("\n## Typed baremetal values\n\n")
	b.WriteString("The Helm chart's `baremetal` value (`deploy/helm/tfccm/examples/baremetal.yaml`): the chart passes\n")
	b.WriteString("it to tfccm as JSON in `baremetal_values_file`, never written into HCL, and tfccm makes it the\n")
	b.WriteString("`load_balancer` block's `settings` (the baremetal set's, `templates/baremetal/README.md`) and\n")
	b.WriteString("`address_pool` blocks; `tfccm render --values` and `tfccm lbhost check --values` read the same values\n")
	b.WriteString("file the same way. An unknown key or a bad value is an error naming the key.\n\n")
	b.WriteString("| Key | Type | Becomes | Description |\n|---|---|---|---|\n")
	writeValueRows(b, "baremetal.", "load_balancer.", reflect.TypeOf(BaremetalValues{}))
}

func writeValueRows(b *strings.Builder, prefix, settingPrefix string, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		setting := f.Tag.Get("setting")
		typ := "string"
		switch f.Type.Kind() {
		case reflect.Int:
			typ = "number"
		case reflect.Bool:
			typ = "bool"
		case reflect.Pointer:
			typ = "bool"
			if f.Type.Elem().Kind() == reflect.Struct {
				typ = "object"
			}
		case reflect.Slice:
			typ = "list"
			if f.Type.Elem().Kind() == reflect.String {
				typ = "list(string)"
			}
		case reflect.Map:
			typ = "map(string)"
		}
		fmt.Fprintf(b, "| `%s%s` | %s | `%s%s` | %s |\n", prefix, name, typ, settingPrefix, setting, f.Tag.Get("doc"))
		switch {
		case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
			writeValueRows(b, prefix+name+".", settingPrefix+setting+".", f.Type.Elem())
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct && prefix != "baremetal.":
			writeValueRows(b, prefix+name+"[].", settingPrefix+setting+"[*].", f.Type.Elem())
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			sub := "load_balancer.settings.hosts."
			if setting == "address_pool" {
				sub = "load_balancer.address_pool."
			}
			writeValueRows(b, prefix+name+"[].", sub, f.Type.Elem())
		}
	}
}

// writeBlock writes a block's section: its doc and the table of its
// attributes, then a section per nested block. path is the block's dotted
// path ("" at the top level).
func writeBlock(b *strings.Builder, title, doc, path string, v reflect.Value) {
	t := v.Type()
	fmt.Fprintf(b, "\n## %s\n\n", title)
	if doc != "" {
		b.WriteString(doc + "\n\n")
	}
	var nested []int
	header := false
	for i := range t.NumField() {
		f := t.Field(i)
		name, kind, ok := hclTag(f)
		if !ok {
			continue
		}
		if kind == "block" {
			nested = append(nested, i)
			continue
		}
		if !header {
			b.WriteString("| Setting | Type | Default | Description |\n|---|---|---|---|\n")
			header = true
		}
		cell, typ, dflt, doc := "`"+name+"`", settingType(f, path, name), defaultText(v.Field(i), path, name), f.Tag.Get("doc")
		switch kind {
		case "remain":
			cell, typ, dflt = "*any*", "any", "—"
		case "label":
			cell += " (label)"
		case "attr":
			dflt, doc = "—", doc+" Required."
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", cell, typ, dflt, strings.ReplaceAll(doc, "|", `\|`))
	}
	for _, i := range nested {
		f := t.Field(i)
		name, _, _ := hclTag(f)
		child := name
		if path != "" {
			child = path + "." + name
		}
		fv := v.Field(i)
		elem := f.Type
		for elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Slice {
			elem = elem.Elem()
		}
		if fv.Kind() == reflect.Pointer && !fv.IsNil() {
			fv = fv.Elem()
		} else {
			fv = reflect.New(elem).Elem() // no default block: its settings' zero values
		}
		heading := blockHeading(strings.Split(child, "."), labelOf(elem))
		writeBlock(b, heading, f.Tag.Get("doc"), child, fv)
	}
}

// hclTag returns a field's HCL name and kind (attr, optional, block, label,
// remain); ok is false for fields gohcl does not decode.
func hclTag(f reflect.StructField) (name, kind string, ok bool) {
	tag, ok := f.Tag.Lookup("hcl")
	if !ok {
		return "", "", false
	}
	name, kind, _ = strings.Cut(tag, ",")
	if kind == "" {
		kind = "attr"
	}
	return name, kind, true
}

// blockHeading shows where a block goes: `load_balancer { health_check { ... } }`.
func blockHeading(path []string, label string) string {
	h := path[len(path)-1]
	if label != "" {
		h += ` "` + strings.ToUpper(label) + `"`
	}
	h += " { ... }"
	for i := len(path) - 2; i >= 0; i-- {
		h = path[i] + " { " + h + " }"
	}
	return "`" + h + "`"
}

func labelOf(t reflect.Type) string {
	for i := range t.NumField() {
		if name, kind, ok := hclTag(t.Field(i)); ok && kind == "label" {
			return name
		}
	}
	return ""
}

// settingType names a setting's type as HCL users know it.
func settingType(f reflect.StructField, path, name string) string {
	if _, ok := durationSetting(path, name); ok {
		return "duration"
	}
	switch f.Type {
	case reflect.TypeOf(cty.Value{}):
		return "object"
	case reflect.TypeOf(map[string]string{}):
		return "map(string)"
	case reflect.TypeOf([]string{}):
		return "list(string)"
	}
	switch f.Type.Kind() {
	case reflect.Int, reflect.Float64:
		return "number"
	case reflect.Bool, reflect.Pointer:
		return "bool"
	}
	return "string"
}

// defaultText shows the value Parse filled in for an omitted setting.
func defaultText(v reflect.Value, path, name string) string {
	if d, ok := durationSetting(path, name); ok {
		return "`\"" + shortDuration(d.def) + "\"`"
	}
	switch x := v.Interface().(type) {
	case string:
		if x != "" {
			return fmt.Sprintf("`%q`", x)
		}
	case int, float64:
		return fmt.Sprintf("`%v`", x)
	case bool:
		return fmt.Sprintf("`%v`", x)
	case cty.Value:
		if x.RawEquals(cty.EmptyObjectVal) {
			return "`{}`"
		}
	}
	return "—"
}

// shortDuration writes d as a user would ("10m", not "10m0s").
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
