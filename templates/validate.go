package templates

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// ValidateDir checks a template set directory (loadbalancer/, variants,
// routes/, instances.hcl) or a single module directory against the
// contract. kind is used for a module directory whose name does not say
// what it is ("" = infer from the name). Every problem is a diagnostic
// naming file:line.
func ValidateDir(dir string, kind Kind) hcl.Diagnostics {
	r := hcl.Range{Filename: dir}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unreadable directory", Detail: err.Error(), Subject: &r}}
	}
	isModule := false
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, ".tf") || strings.HasSuffix(n, ".tf.json") {
			isModule = true
		}
	}
	if !isModule {
		t, err := readTree(os.DirFS(dir), ".")
		if err != nil {
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unreadable template set", Detail: err.Error(), Subject: &r}}
		}
		if len(t.modules) == 0 && t.instances == nil {
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Not a template set",
				Detail: "Found no .tf files, no loadbalancer/, loadbalancer.<variant>/ or routes/ module and no instances.hcl.", Subject: &r}}
		}
		mods, diags := parseTree(t, filepath.Clean(dir))
		if why := (&Set{modules: mods}).OpenTofuOnly(); why != "" {
			diags = append(diags, openTofuOnly(why, r))
		}
		for _, name := range t.ignored {
			if strings.HasPrefix(name, string(KindLoadBalancer)) || strings.HasPrefix(name, string(KindRoutes)) {
				ir := hcl.Range{Filename: filepath.Join(dir, name)}
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Ignored entry",
					Detail: fmt.Sprintf("%q is not part of the set layout (variants are named loadbalancer.<variant>).", name), Subject: &ir})
			}
		}
		return diags
	}
	abs, _ := filepath.Abs(dir)
	key := filepath.Base(abs)
	k, variant, ok := kindOf(key)
	if kind != "" {
		if _, known := Inputs[kind]; !known {
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unknown module kind", Detail: fmt.Sprintf("Kind %q: use loadbalancer or routes.", kind), Subject: &r}}
		}
		if !ok || k != kind {
			key, variant = string(kind), ""
		}
		k = kind
	} else if !ok {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unknown module kind",
			Detail: "Name the directory loadbalancer, loadbalancer.<variant> or routes, or pass the kind explicitly.", Subject: &r}}
	}
	var files []File
	if err := readModuleFiles(os.DirFS(dir), ".", "", 0, &treeBudget{}, &files); err != nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unreadable module", Detail: err.Error(), Subject: &r}}
	}
	m, diags := parseModule(key, k, variant, filepath.Clean(dir), files)
	if m != nil && m.OpenTofuOnly != "" {
		diags = append(diags, openTofuOnly(m.OpenTofuOnly, r))
	}
	return diags
}

// openTofuOnly is the note `tfccm validate` prints for a module or set
// that only OpenTofu runs.
func openTofuOnly(why string, r hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Needs OpenTofu",
		Detail:  fmt.Sprintf("%s: OpenTofu %s or later runs this, HashiCorp Terraform cannot; the controller refuses to start with a terraform.binary that is Terraform.", why, MinOpenTofu),
		Subject: &r}
}
