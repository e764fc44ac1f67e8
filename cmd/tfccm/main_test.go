package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/internal/manifest"
	"github.com/tfccm/tfccm/ipam"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
	corev1 "k8s.io/api/core/v1"
)

// writeConfig writes a cloud config using the testdata template set of
// package templates as the override directory (it replaces every module).
func writeConfig(t *testing.T, extra string) string {
	t.Helper()
	override, err := filepath.Abs("../../templates/testdata/sets/full")
	if err != nil {
		t.Fatal(err)
	}
	src := `cluster_name = "prod-eu"
work_dir     = "` + t.TempDir() + `"
override_dir = "` + override + `"
load_balancer {
  settings     = { vip_pool = "10.252.0.0/24" }
  service_vars = ["size"]
}
routes {
  settings = { cloud_netns = "tfccm-cloud" }
}
` + extra
	p := filepath.Join(t.TempDir(), "cloud.hcl")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// tree reads every file under dir with its mode.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		rel, _ := filepath.Rel(dir, p)
		out[rel] = info.Mode().Perm().String() + "\n" + string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRenderMatchesController proves that `tfccm render` writes byte for
// byte the workspace the controller's code path (Loader → Render →
// WriteDir) writes.
func TestRenderMatchesController(t *testing.T) {
	cfgPath := writeConfig(t, "")
	for _, tc := range []struct {
		name   string
		args   []string
		render func(*config.Config, *templates.Set) (*workspace.Spec, error)
	}{
		{"loadbalancer", []string{"--service", "testdata/svc.yaml", "--nodes", "testdata/nodes.yaml"},
			func(cfg *config.Config, s *templates.Set) (*workspace.Spec, error) {
				svc, err := manifest.ReadService("testdata/svc.yaml")
				if err != nil {
					return nil, err
				}
				nodes, err := manifest.ReadNodes("testdata/nodes-multi.yaml")
				if err != nil {
					return nil, err
				}
				a, err := ipam.Offline(cfg, []*corev1.Service{svc}, nil).Decide(svc)
				if err != nil {
					return nil, err
				}
				return s.RenderLoadBalancer(cfg, svc, nodes, templates.Addresses{IPs: a.IPs, Shared: a.Shared})
			}},
		{"routes", []string{"--routes", "--nodes", "testdata/nodes-multi.yaml"},
			func(cfg *config.Config, s *templates.Set) (*workspace.Spec, error) {
				nodes, err := manifest.ReadNodes("testdata/nodes.yaml")
				if err != nil {
					return nil, err
				}
				return s.RenderRoutes(cfg, templates.RoutesFromNodes(nodes))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cliDir := filepath.Join(t.TempDir(), "cli")
			code, stdout, stderr := runCLI(t, append([]string{"render", "--config", cfgPath, "--out", cliDir}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			cfg, err := config.Load(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			l, err := templates.NewLoader(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ws, err := tc.render(cfg, l.Set())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stdout, ws.Hash) || !strings.Contains(stdout, ws.Name) {
				t.Errorf("stdout %q lacks workspace name/hash", stdout)
			}
			ctrlDir := filepath.Join(t.TempDir(), "controller")
			if err := ws.WriteDir(ctrlDir); err != nil {
				t.Fatal(err)
			}
			cli, ctrl := tree(t, cliDir), tree(t, ctrlDir)
			if len(cli) != len(ctrl) || len(cli) < 4 {
				t.Fatalf("cli wrote %d files, controller %d", len(cli), len(ctrl))
			}
			for p, want := range ctrl {
				if cli[p] != want {
					t.Errorf("%s differs between the CLI and the controller path", p)
				}
			}
		})
	}
}

func TestRenderOutput(t *testing.T) {
	cfgPath := writeConfig(t, "")
	dir := t.TempDir()
	code, _, stderr := runCLI(t, "render", "--config", cfgPath, "--service", "testdata/svc.yaml", "--nodes", "testdata/nodes.yaml", "--out", dir)
	if code != 0 {
		t.Fatal(stderr)
	}
	tfvars, err := os.ReadFile(filepath.Join(dir, templates.TfvarsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"example.com/note" = "owner $${team} %%{ if x }"`,
		"proxy_protocol = true",
		"health_check_node_port = 31999",
		`size = "large"`,
		`name = "node-a"`,
	} {
		// Compare with alignment spaces collapsed.
		if !strings.Contains(strings.Join(strings.Fields(string(tfvars)), " "), want) {
			t.Errorf("tfvars lacks %q:\n%s", want, tfvars)
		}
	}
	if strings.Index(string(tfvars), `"node-a"`) > strings.Index(string(tfvars), `"node-b"`) {
		t.Error("nodes not sorted by name")
	}
}

func TestRenderErrors(t *testing.T) {
	cfgPath := writeConfig(t, "")
	tmp := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	svc, _ := os.ReadFile("testdata/svc.yaml")
	badVariant := write("variant.yaml", strings.Replace(string(svc), "tfccm.io/proxy-protocol: \"true\"", "tfccm.io/template: ../../etc", 1))
	clusterIP := write("clusterip.yaml", strings.Replace(string(svc), "type: LoadBalancer", "type: ClusterIP", 1))
	otherClass := write("other-class.yaml", strings.Replace(string(svc), "type: LoadBalancer", "type: LoadBalancer\n  loadBalancerClass: metallb.io/metallb", 1))
	typo := write("typo.yaml", strings.Replace(string(svc), "externalTrafficPolicy", "externalTrafficPolcy", 1))
	deployment := write("deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n")
	dupNodes := write("dup.yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Node\nmetadata:\n  name: a\n")
	badCfg := write("bad.hcl", "cluster_name = \"Bad Name\"\n")
	adminVars := write("admin-vars.yaml", strings.Replace(string(svc), `tfccm.io/vars: '{"size": "large"}'`, `tfccm.io/vars: '{"size": "large", "vip_pool": "10.250.0.0/24"}'`, 1))
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no args", []string{"render"}, exitUsage, "missing --config, --nodes, --out, --service"},
		{"both", []string{"render", "--routes", "--service", "x", "--config", cfgPath, "--nodes", "n", "--out", "o"}, exitUsage, "exclusive"},
		{"bad variant", []string{"render", "--config", cfgPath, "--service", badVariant, "--nodes", "testdata/nodes.yaml"}, exitError,
			`Service shop/web: annotation tfccm.io/template: "../../etc" is not a valid template variant name`},
		{"cluster ip", []string{"render", "--config", cfgPath, "--service", clusterIP, "--nodes", "testdata/nodes.yaml"}, exitError, `has type "ClusterIP"`},
		{"another class", []string{"render", "--config", cfgPath, "--service", otherClass, "--nodes", "testdata/nodes.yaml"}, exitError, `its loadBalancerClass "metallb.io/metallb" is not tfccm's (load_balancer_class "tfccm.io/terraform")`},
		{"unknown field", []string{"render", "--config", cfgPath, "--service", typo, "--nodes", "testdata/nodes.yaml"}, exitError, `unknown field "externalTrafficPolcy"`},
		{"not a service", []string{"render", "--config", cfgPath, "--service", deployment, "--nodes", "testdata/nodes.yaml"}, exitError, "want a v1 Service, found apps/v1 Deployment"},
		{"nodes not nodes", []string{"render", "--config", cfgPath, "--service", "testdata/svc.yaml", "--nodes", deployment}, exitError, "want a v1 Node or NodeList"},
		{"dup nodes", []string{"render", "--config", cfgPath, "--service", "testdata/svc.yaml", "--nodes", dupNodes}, exitError, `Node "a" appears twice`},
		{"missing file", []string{"render", "--config", cfgPath, "--service", "testdata/none.yaml", "--nodes", "testdata/nodes.yaml"}, exitError, "no such file"},
		{"a setting the admin did not allow", []string{"render", "--config", cfgPath, "--service", adminVars, "--nodes", "testdata/nodes.yaml"}, exitError,
			`Service shop/web: annotation tfccm.io/vars: key "vip_pool" is not a setting a Service may set (load_balancer.service_vars of the cloud config allows: size)`},
		{"bad config", []string{"render", "--config", badCfg, "--service", "testdata/svc.yaml", "--nodes", "testdata/nodes.yaml"}, exitError, "bad.hcl:1,16-26: Invalid cluster_name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := tt.args
			if tt.code == exitError {
				args = append(args, "--out", out)
			}
			code, _, stderr := runCLI(t, args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d containing %q", code, stderr, tt.code, tt.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a failed render created %s", out)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	code, stdout, stderr := runCLI(t, "validate", "../../templates/testdata/sets/full", "../../templates/local")
	if code != 0 || strings.Count(stdout, ": ok") != 2 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, "validate", "../../templates/testdata/sets/full", "../../templates/testdata/invalid/bad_type")
	if code != exitError || !strings.Contains(stderr, "bad_type/loadbalancer/main.tf:5,1: error: Incompatible input type; nodes[*].name: declared as number, but tfccm provides string.") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "validate", "--kind", "routes", "../../templates/testdata/sets/full/loadbalancer")
	if code != exitError || !strings.Contains(stderr, "Unknown input") {
		t.Fatalf("loadbalancer module validated as routes: exit %d, %q", code, stderr)
	}
	if code, _, _ := runCLI(t, "validate"); code != exitUsage {
		t.Fatalf("no dir: exit %d", code)
	}
	if code, _, _ := runCLI(t, "frobnicate"); code != exitUsage {
		t.Fatalf("unknown command: exit %d", code)
	}
}
