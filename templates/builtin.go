package templates

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// builtinFS holds the built-in template sets, one directory each.
//
//go:embed all:local all:hcloud all:digitalocean all:oci all:openstack all:google all:exoscale all:proxmox all:vsphere all:baremetal all:nodes
var builtinFS embed.FS

// borrowed names the modules a built-in set takes from another built-in
// set instead of keeping a copy (set -> module -> the set that holds it):
// one file to mend, and no two copies drifting apart.
var borrowed = map[string]map[string]string{
	"nodes": {"routes": "baremetal"}, // the same routes on a Linux router over SSH
}

// builtinSets lists the names of the embedded template sets.
func builtinSets() []string {
	entries, _ := fs.ReadDir(builtinFS, ".")
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// LoadBuiltin loads the embedded template set name.
func LoadBuiltin(name string) (*Set, error) {
	known := builtinSets()
	found := false
	for _, k := range known {
		found = found || k == name
	}
	if !found {
		return nil, fmt.Errorf("template_set %q is not built in (built in: %s)", name, strings.Join(known, ", "))
	}
	t, err := readTree(builtinFS, name)
	if err != nil {
		return nil, fmt.Errorf("built-in template set %s: %w", name, err)
	}
	for _, mod := range sortedKeys(borrowed[name]) {
		from := borrowed[name][mod]
		if _, dup := t.modules[mod]; dup {
			return nil, fmt.Errorf("built-in template set %s: module %s is both borrowed from %s and its own", name, mod, from)
		}
		var files []File
		if err := readModuleFiles(builtinFS, path.Join(from, mod), "", 0, &treeBudget{}, &files); err != nil {
			return nil, fmt.Errorf("built-in template set %s: module %s borrowed from %s: %w", name, mod, from, err)
		}
		sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
		t.modules[mod] = files
	}
	s, diags := buildSet(nil, t, "builtin:"+name)
	if diags.HasErrors() {
		return nil, fmt.Errorf("built-in template set %s: %w", name, diagError(diags))
	}
	return s, nil
}

// diagError turns diagnostics into an error whose text lists each one as
// "file:line,col: summary: detail".
func diagError(diags hcl.Diagnostics) error {
	return fmt.Errorf("%s", FormatDiagnostics(diags))
}

// FormatDiagnostics renders diagnostics one per line as
// "file:line,col: severity: summary; detail".
func FormatDiagnostics(diags hcl.Diagnostics) string {
	var lines []string
	for _, d := range diags {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		loc := ""
		if d.Subject != nil {
			loc = d.Subject.Filename
			if d.Subject.Start.Line > 0 {
				loc = fmt.Sprintf("%s:%d,%d", loc, d.Subject.Start.Line, d.Subject.Start.Column)
			}
			loc += ": "
		}
		msg := loc + sev + ": " + d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
		}
		lines = append(lines, msg)
	}
	return strings.Join(lines, "\n")
}
