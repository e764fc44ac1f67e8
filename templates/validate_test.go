package templates

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateDir(t *testing.T) {
	tests := []struct {
		dir  string
		kind Kind
		want []string // substrings of the formatted diagnostics; nil = valid
	}{
		{"sets/full", "", nil},
		{"sets/full/loadbalancer", "", nil},
		{"sets/full/loadbalancer.internal", "", nil},
		{"sets/full/routes", "", nil},
		{"invalid/optional_missing_ok", "", nil},
		{"invalid/credentials_ok", "", nil},
		{"invalid/credentials_bad_name", "", []string{"credentials_bad_name/loadbalancer/credentials.hcl:1,7: error: Invalid credential name", "TF_VAR_token may not be set"}},
		{"invalid/credentials_plain", "", []string{"credentials_plain/loadbalancer/main.tf:5,1: error: Credentials variable is not ephemeral", "ephemeral = true"}},
		{"invalid/unknown_var", "", []string{"unknown_var/loadbalancer/main.tf:5,1: error: Unknown input", `Variable "flavor" has no default`}},
		{"invalid/bad_attr", "", []string{"bad_attr/loadbalancer/main.tf:1,1: error: Incompatible input type", "service.color: tfccm provides no such attribute"}},
		{"invalid/bad_type", "", []string{"bad_type/loadbalancer/main.tf:5,1:", "nodes[*].name: declared as number, but tfccm provides string"}},
		{"invalid/missing_output", "", []string{"missing_output/loadbalancer: error: Missing required output", `output "ingress"`}},
		{"invalid/parse_error", "", []string{"parse_error/loadbalancer/main.tf:1,25: error: Unclosed configuration block"}},
		{"invalid/backend_block", "", []string{"backend_block/loadbalancer/main.tf:2,3: error: Template declares a backend block"}},
		{"invalid/settings_list", "", []string{"settings_list/loadbalancer/main.tf:1,1:", "must be an object, a map or any, not list(string)"}},
		{"invalid/routes_output", "", []string{"routes_output/routes: error: Missing required output", `"routes"`}},
		{"invalid/bad_variant", "", []string{"Invalid variant name", "loadbalancer.Bad_Name"}},
		{"invalid/reserved_file", "", []string{"Reserved file name", "tfccm.auto.tfvars"}},
		{"invalid/health_output", "", []string{"health_output/loadbalancer/health: error: Missing required output", `output "backends"`}},
		{"invalid/health_var", "", []string{"health_var/loadbalancer/health/main.tf:1,1:", "nodes[*].name: declared as number, but tfccm provides string"}},
		{"invalid/bad_backends", "", []string{"bad_backends/loadbalancer/backends.hcl: error: Invalid backend attribute", `"*.backends"`}},
		{"invalid/bad_instances", "", []string{"bad_instances/instances.hcl:2,"}},
		{"invalid/unknown_var/loadbalancer", "", []string{"main.tf:5,1: error: Unknown input"}},
		{"invalid/unknown_var/loadbalancer", KindRoutes, []string{"Missing required output", `"routes"`}},
		{"invalid", "", []string{"Not a template set"}},
	}
	for _, tt := range tests {
		t.Run(tt.dir+string(tt.kind), func(t *testing.T) {
			diags := ValidateDir(filepath.Join("testdata", tt.dir), tt.kind)
			got := FormatDiagnostics(diags)
			if tt.want == nil {
				if diags.HasErrors() {
					t.Fatalf("unexpected diagnostics:\n%s", got)
				}
				return
			}
			if !diags.HasErrors() {
				t.Fatalf("no error; diagnostics: %q", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("diagnostics lack %q:\n%s", w, got)
				}
			}
		})
	}
}
