package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/templates"
)

// TestRenderPeering: `tfccm render --peering` writes the BGP peering
// workspace the controller applies (the baremetal set's bgp module with
// load_balancer.settings); settings without bgp, or a set without a bgp
// module, are refused saying so; --peering excludes --service and
// --routes.
func TestRenderPeering(t *testing.T) {
	write := func(set, settings string) string {
		p := filepath.Join(t.TempDir(), "cloud.hcl")
		src := `cluster_name = "c1"
template_set = "` + set + `"
work_dir     = "` + t.TempDir() + `"
load_balancer {
  settings = {
    hosts    = { lb-a = { address = "10.0.0.2", host_key = "ssh-ed25519 AAAA" } }
    vip_pool = "10.0.0.0/24"
    ssh_agent_socket = "/run/agent"
` + settings + `
  }
}
`
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bgp := `    bgp = { asn = 64512, peers = [{ name = "tor", address = "10.0.0.1", asn = 64500 }] }`
	out := filepath.Join(t.TempDir(), "ws")
	code, stdout, stderr := runCLI(t, "render", "--peering", "--config", write("baremetal", bgp), "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "Wrote workspace "+templates.PeeringWorkspaceName+" (template bgp") {
		t.Errorf("stdout: %s", stdout)
	}
	files := tree(t, out)
	if _, ok := files["main.tf"]; !ok || !strings.Contains(files["main.tf"], "lbhost_bgp_speaker") {
		t.Errorf("the bgp module's main.tf is not in the workspace: %v", files)
	}
	if v := strings.Join(strings.Fields(files[templates.TfvarsFile]), " "); !strings.Contains(v, `asn = 64512`) || !strings.Contains(v, `name = "tor"`) {
		t.Errorf("tfvars lack the bgp settings:\n%s", files[templates.TfvarsFile])
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no bgp", []string{"--config", write("baremetal", "")}, exitError, "load_balancer.settings has no bgp"},
		{"no bgp module", []string{"--config", write("hcloud", bgp)}, exitError, "no bgp module"},
		{"with --service", []string{"--config", write("baremetal", bgp), "--service", "testdata/svc.yaml"}, exitUsage, "exclusive"},
		{"with --routes", []string{"--config", write("baremetal", bgp), "--routes"}, exitUsage, "exclusive"},
	} {
		args := append([]string{"render", "--peering", "--out", t.TempDir()}, tc.args...)
		if code, _, stderr := runCLI(t, args...); code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d (want %d), stderr %q (want %q)", tc.name, code, tc.code, stderr, tc.want)
		}
	}
}
