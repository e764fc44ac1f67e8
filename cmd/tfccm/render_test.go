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

// TestRenderFromChartValues: --values renders from the chart's values file
// the workspace --config renders from the cloud config written by hand
// with the same settings; bad values are refused naming the key.
func TestRenderFromChartValues(t *testing.T) {
	values := "../../deploy/helm/tfccm/examples/baremetal.yaml"
	cfgPath := filepath.Join(t.TempDir(), "cloud.hcl")
	if err := os.WriteFile(cfgPath, []byte(`cluster_name = "prod"
template_set = "baremetal"
load_balancer {
  settings = {
    hosts = {
      lb-a = { address = "192.168.10.2", user = "tfccm", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFn3B0tNsg4UhmJRQbcVPMsXWe9J6fuk1Ip3nRGY4r5u" }
      lb-b = { address = "192.168.10.3", user = "tfccm", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKvE8FWbZKN5n2cMVG0sIrBwVNHo86HycNE0m6CwH3Vu" }
    }
    sudo                 = true
    vip_pool             = "192.168.10.128/25"
    vrrp_interface       = "eth0"
    virtual_router_ids   = "50-99"
    ssh_private_key_file = "/etc/tfccm/ssh/id_ed25519"
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	svc := filepath.Join(t.TempDir(), "svc.yaml")
	if err := os.WriteFile(svc, []byte(`apiVersion: v1
kind: Service
metadata: { name: web, namespace: shop, uid: 7d3e2a8c-1b1f-4a57-9a53-0f6d3c2b9e11 }
spec:
  type: LoadBalancer
  ports: [{ name: http, protocol: TCP, port: 80, targetPort: 8080, nodePort: 30080 }]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"render", "--backend", "local", "--service", svc, "--nodes", "testdata/nodes.yaml"}
	fromValues, fromConfig := filepath.Join(t.TempDir(), "v"), filepath.Join(t.TempDir(), "c")
	if code, _, stderr := runCLI(t, append(args, "--values", values, "--out", fromValues)...); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := runCLI(t, append(args, "--config", cfgPath, "--out", fromConfig)...); code != 0 {
		t.Fatal(stderr)
	}
	v, c := tree(t, fromValues), tree(t, fromConfig)
	if len(v) == 0 || len(v) != len(c) {
		t.Fatalf("%d files from --values, %d from --config", len(v), len(c))
	}
	for p, want := range c {
		if v[p] != want {
			t.Errorf("%s differs between --values and --config", p)
		}
	}
	if !strings.Contains(strings.Join(mapValues(v), "\n"), "192.168.10.128/25") {
		t.Error("the rendered workspace does not hold the values' vipPool")
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	src, err := os.ReadFile(values)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(strings.Replace(string(src), "interface: eth0", "interface: \"eth0; reboot\"", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, append(args, "--values", bad, "--out", t.TempDir())...); code == 0 || !strings.Contains(stderr, "/baremetal/interface") {
		t.Errorf("bad interface: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, append(args, "--values", values, "--config", cfgPath, "--out", t.TempDir())...); code != exitUsage || !strings.Contains(stderr, "exclusive") {
		t.Errorf("--values with --config: exit %d, %s", code, stderr)
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
