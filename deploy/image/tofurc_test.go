package image

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/repo"
)

// TestCLIConfigInstallsFromMirrorOffline runs the pinned OpenTofu's init
// with the image's CLI config (its mirror path pointed at a test mirror):
// a mirrored provider installs without asking its registry, which this
// machine cannot reach.
func TestCLIConfigInstallsFromMirrorOffline(t *testing.T) {
	tofu, err := repo.TofuPath()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mirror := filepath.Join(dir, "mirror")
	bin := filepath.Join(mirror, "example.com/acme/widget/1.0.0/linux_amd64/terraform-provider-widget_v1.0.0")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	addrs, err := mirrored(mirror)
	if err != nil || strings.Join(addrs, ",") != "example.com/acme/widget" {
		t.Fatalf("mirrored: %v %v", addrs, err)
	}
	rc := filepath.Join(dir, "tofurc")
	if err := os.WriteFile(rc, []byte(strings.ReplaceAll(CLIConfigFor(addrs), ProviderMirror, mirror)), 0o644); err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(dir, "mod")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	main := "terraform {\n  required_providers {\n    widget = { source = \"example.com/acme/widget\", version = \"1.0.0\" }\n  }\n}\n"
	if err := os.WriteFile(filepath.Join(mod, "main.tf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tofu, "init", "-no-color", "-input=false")
	cmd.Dir = mod
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TF_CLI_CONFIG_FILE=" + rc}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tofu init with the image's CLI config: %v\n%s\nconfig:\n%s", err, out, CLIConfigFor(addrs))
	}
	if !strings.Contains(string(out), "example.com/acme/widget v1.0.0") {
		t.Errorf("provider not installed from the mirror:\n%s", out)
	}
	if _, err := mirrored(t.TempDir()); err == nil {
		t.Error("an empty directory was taken for a provider mirror")
	}
}
