package annotations

import (
	"fmt"
	"strings"
)

// Markers delimit the generated annotation table in Markdown files.
const (
	BeginMarker = "<!-- BEGIN GENERATED annotations (go generate ./annotations) -->"
	EndMarker   = "<!-- END GENERATED annotations -->"
)

// Table renders the Markdown table of all annotations, between markers.
func Table() string {
	var b strings.Builder
	b.WriteString(BeginMarker + "\n")
	b.WriteString("| Annotation | Type | Example | Description |\n|---|---|---|---|\n")
	for _, d := range All() {
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", d.Name, d.Type, d.Example, strings.ReplaceAll(d.Doc, "|", `\|`))
	}
	b.WriteString(EndMarker + "\n")
	return b.String()
}

// Document renders docs/annotations.md.
func Document() string {
	var b strings.Builder
	b.WriteString("# Service annotations\n\n")
	b.WriteString("Generated from the declarations in package `annotations`; do not edit by hand.\n")
	b.WriteString("Every annotation under `" + Prefix + "` is checked: an unknown key or an invalid value\n")
	b.WriteString("fails the load balancer sync with an Event on the Service naming the annotation.\n\n")
	b.WriteString(Table())
	b.WriteString("\n## Keys tfccm writes (review mode)\n\n")
	b.WriteString("Not for Services: tfccm sets these on the objects it publishes, and `tfccm approve` reads them.\n\n")
	b.WriteString("| Key | Kind | On | Description |\n|---|---|---|---|\n")
	for _, w := range WireKeys() {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", w.Name, w.Kind, w.On, strings.ReplaceAll(w.Doc, "|", `\|`))
	}
	return b.String()
}

// Splice replaces the generated table between the markers in doc. It reports
// false if doc has no markers.
func Splice(doc string) (string, bool) {
	i := strings.Index(doc, BeginMarker)
	j := strings.Index(doc, EndMarker)
	if i < 0 || j < i {
		return doc, false
	}
	end := j + len(EndMarker)
	if end < len(doc) && doc[end] == '\n' {
		end++
	}
	return doc[:i] + Table() + doc[end:], true
}
