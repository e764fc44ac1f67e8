package clouds

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/templates"
)

// cloudSets are the built-in real-cloud template sets this package tests.
var cloudSets = []string{"hcloud", "digitalocean", "oci", "openstack", "google", "exoscale", "proxmox", "vsphere"}

// TestValidateSets: `tfccm validate` (templates.ValidateDir) accepts each
// set without warnings, and its files are `tofu fmt` clean.
func TestValidateSets(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	tofu := repo.Tofu(t)
	for _, set := range cloudSets {
		t.Run(set, func(t *testing.T) {
			dir := filepath.Join(root, "templates", set)
			if diags := templates.ValidateDir(dir, ""); len(diags) > 0 {
				t.Errorf("tfccm validate %s:\n%s", dir, templates.FormatDiagnostics(diags))
			}
			cmd := exec.Command(tofu, "fmt", "-check", "-recursive", "-no-color", dir)
			cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("tofu fmt -check %s: %v\n%s", dir, err, out)
			}
			if _, err := templates.LoadBuiltin(set); err != nil {
				t.Errorf("not embedded: %v", err)
			}
		})
	}
}
