package annotations

import (
	"fmt"
	"strings"
)

// Markers delimit the generated annotation table in Markdown files.
const (
	beginMarker = "<!-- BEGIN GENERATED annotations (go generate ./annotations) -->"
	endMarker   = "<!-- END GENERATED annotations -->"
)

// table renders the Markdown table of all annotations, between markers.
func table() string {
	var b strings.Builder
	b.WriteString(beginMarker + "\n")
	b.WriteString("| Annotation | Type | Example | Description |\n|---|---|---|---|\n")
	for _, d := range All() {
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", d.Name, d.Type, d.Example, strings.ReplaceAll(d.Doc, "|", `\|`))
	}
	b.WriteString(endMarker + "\n")
	return b.String()
}

// document renders docs/annotations.md.
func document() string {
	var b strings.Builder
	b.WriteString("# Service annotations\n\n")
	b.WriteString("Generated from the declarations in package `annotations`; do not edit by hand.\n")
	b.WriteString("Every annotation under `" + Prefix + "` is checked: an unknown key or an invalid value\n")
	b.WriteString("fails the load balancer sync with an Event on the Service naming the annotation.\n\n")
	b.WriteString(table())
	b.WriteString("\n## Keys tfccm writes (review mode)\n\n")
	b.WriteString("Not for Services: tfccm sets these on the objects it publishes, and `tfccm approve` reads them.\n\n")
	b.WriteString("| Key | Kind | On | Description |\n|---|---|---|---|\n")
	for _, w := range WireKeys() {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", w.Name, w.Kind, w.On, strings.ReplaceAll(w.Doc, "|", `\|`))
	}
	return b.String()
}

// splice replaces the generated table between the markers in doc. It reports
// false if doc has no markers.
func splice(doc string) (string, bool) {
	i := strings.Index(doc, beginMarker)
	j := strings.Index(doc, endMarker)
	if i < 0 || j < i {
		return doc, false
	}
	end := j + len(endMarker)
	if end < len(doc) && doc[end] == '\n' {
		end++
	}
	return doc[:i] + table() + doc[end:], true
}
