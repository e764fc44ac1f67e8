package templates

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/repo"
)

func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct{ first, want string }{
		{"OpenTofu v1.12.6", ""},
		{"OpenTofu v1.9.0", ""},
		{"OpenTofu v1.8.3", "is OpenTofu v1.8.3"},
		{"Terraform v1.11.4", "is Terraform v1.11.4: set terraform.binary to an OpenTofu binary"},
		{"something else", `version says "something else"`},
	} {
		err := checkVersion(tc.first, "/usr/bin/x", "loadbalancer: provider \"lbhost\" uses for_each")
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("checkVersion(%q) = %v, want %q", tc.first, err, tc.want)
		}
	}
}

// The built-in sets say whether they need OpenTofu: only baremetal does
// (provider for_each over its LB hosts).
func TestBuiltinOpenTofuOnly(t *testing.T) {
	for _, name := range builtinSets() {
		s, err := LoadBuiltin(name)
		if err != nil {
			t.Fatal(err)
		}
		why := s.OpenTofuOnly()
		if (name == "baremetal") != (why != "") {
			t.Errorf("set %s: OpenTofuOnly = %q", name, why)
		}
		if name == "baremetal" && !strings.Contains(why, `loadbalancer: provider "lbhost" uses for_each (`) {
			t.Errorf("baremetal: OpenTofuOnly = %q", why)
		}
	}
}

// The real binaries: bin/tofu runs the baremetal set, Terraform (when
// installed) is refused naming itself.
func TestCheckBinaryReal(t *testing.T) {
	s, err := LoadBuiltin("baremetal")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckBinary(context.Background(), s, repo.Tofu(t)); err != nil {
		t.Errorf("OpenTofu refused: %v", err)
	}
	tf, err := exec.LookPath("terraform")
	if err != nil {
		t.Skip("no terraform on PATH")
	}
	if err := CheckBinary(context.Background(), s, tf); err == nil || !strings.Contains(err.Error(), "is Terraform v") {
		t.Errorf("Terraform accepted or unclear: %v", err)
	}
	local, _ := LoadBuiltin("local")
	if err := CheckBinary(context.Background(), local, tf); err != nil {
		t.Errorf("the local set refused with Terraform: %v", err)
	}
}
