package templates

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/config"
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
		err := checkVersion(tc.first, "/usr/bin/x", "the template set", "loadbalancer: provider \"lbhost\" uses for_each", tofuOnly)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("checkVersion(%q) = %v, want %q", tc.first, err, tc.want)
		}
	}
	// Ephemeral variables: OpenTofu 1.11, Terraform 1.10.
	for _, tc := range []struct{ first, want string }{
		{"OpenTofu v1.12.6", ""},
		{"OpenTofu v1.11.0", ""},
		{"OpenTofu v1.10.5", "needs OpenTofu 1.11 or Terraform 1.10 or later"},
		{"Terraform v1.11.4", ""},
		{"Terraform v1.10.0", ""},
		{"Terraform v1.9.8", "is Terraform v1.9.8"},
	} {
		err := checkVersion(tc.first, "/usr/bin/x", "the template set", "loadbalancer: variable \"credentials\" is ephemeral", ephemeralVariables)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("ephemeral: checkVersion(%q) = %v, want %q", tc.first, err, tc.want)
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
		if name == "baremetal" && !strings.Contains(why, `: provider "lbhost" uses for_each (`) {
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

// TestCheckEncryption: with an encryption block, a binary whose version
// says Terraform is refused naming the block (whatever its file name);
// OpenTofu passes; without the block nothing is run.
func TestCheckEncryption(t *testing.T) {
	enc := &config.Encryption{}
	if err := CheckEncryption(context.Background(), enc, repo.Tofu(t)); err != nil {
		t.Errorf("OpenTofu refused: %v", err)
	}
	fake := filepath.Join(t.TempDir(), "tofu")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'Terraform v1.10.5'\necho 'on linux_amd64'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := CheckEncryption(context.Background(), enc, fake)
	if err == nil || !strings.Contains(err.Error(), "the encryption block needs OpenTofu") || !strings.Contains(err.Error(), "is Terraform v1.10.5") {
		t.Errorf("Terraform accepted or unclear: %v", err)
	}
	if err := CheckEncryption(context.Background(), nil, fake); err != nil {
		t.Errorf("no encryption block, but: %v", err)
	}
}
