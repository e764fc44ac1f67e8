package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/templates"
)

// TestRenderOfflineBackend: --backend local replaces the chart's
// in-cluster backend and the encryption block, so tofu init needs no
// cluster; the inputs stay the controller's.
func TestRenderOfflineBackend(t *testing.T) {
	t.Setenv("TFCCM_TEST_PASSPHRASE", "correct horse battery staple")
	cfgPath := writeConfig(t, `backend "kubernetes" {
  in_cluster_config = true
  namespace         = "tfccm-state"
}
encryption {
  key_provider "pbkdf2" "k" { passphrase = env.TFCCM_TEST_PASSPHRASE }
  method "aes_gcm" "m" { keys = key_provider.pbkdf2.k }
  state { method = method.aes_gcm.m }
}
`)
	args := []string{"render", "--config", cfgPath, "--service", "testdata/svc.yaml", "--nodes", "testdata/nodes.yaml"}
	inCluster, offline := filepath.Join(t.TempDir(), "c"), filepath.Join(t.TempDir(), "o")
	if code, _, stderr := runCLI(t, append(args, "--out", inCluster)...); code != 0 {
		t.Fatal(stderr)
	}
	code, stdout, stderr := runCLI(t, append(args, "--backend", "local", "--out", offline)...)
	if code != 0 {
		t.Fatal(stderr)
	}
	c, o := tree(t, inCluster), tree(t, offline)
	if !strings.Contains(c[templates.BackendFile], `backend "kubernetes"`) || !strings.Contains(c[templates.BackendFile], "encryption") {
		t.Fatalf("the config's backend was not rendered:\n%s", c[templates.BackendFile])
	}
	b := o[templates.BackendFile]
	for _, bad := range []string{"kubernetes", "in_cluster_config", "encryption", "pbkdf2"} {
		if strings.Contains(b, bad) {
			t.Errorf("offline backend file still has %q:\n%s", bad, b)
		}
	}
	if !strings.Contains(b, `backend "local"`) || !strings.Contains(b, `.tfstate"`) || strings.Contains(b, "/") {
		t.Errorf("offline backend is not a local state beside the workspace:\n%s", b)
	}
	for p, want := range c {
		if p != templates.BackendFile && o[p] != want && !strings.HasPrefix(p, ".tfccm") {
			t.Errorf("%s differs between the offline and the in-cluster render", p)
		}
	}
	if strings.Contains(stdout, "Secret backend settings") {
		t.Errorf("offline render asks for backend secrets: %s", stdout)
	}
	if code, _, stderr := runCLI(t, append(args, "--backend", "s3", "--out", t.TempDir())...); code != exitUsage || !strings.Contains(stderr, "config or local") {
		t.Errorf("--backend s3: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(offline, "terraform.tfstate")); err == nil {
		t.Error("render wrote a state")
	}
}
