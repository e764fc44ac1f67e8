package tfenv

import (
	"slices"
	"strings"
	"testing"
)

func TestBuild(t *testing.T) {
	t.Setenv("TF_VAR_leak", "x")
	t.Setenv("TF_CLI_CONFIG_FILE", "/nonexistent/.terraformrc")
	t.Setenv("TFENV_PASSED", "passed-value")
	t.Setenv("TFENV_NOT_PASSED", "no")
	env, secrets, err := Build(Settings{
		Env:            map[string]string{"TOKEN": "tok", "LONGTOKEN": "tok-and-more-x"},
		PassEnv:        []string{"TFENV_PASSED", "TFENV_UNSET"},
		PluginCacheDir: "/cache",
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"TOKEN": "tok", "TFENV_PASSED": "passed-value", "TF_PLUGIN_CACHE_DIR": "/cache", "CHECKPOINT_DISABLE": "1"} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	for _, k := range []string{"TF_VAR_leak", "TF_CLI_CONFIG_FILE", "TFENV_NOT_PASSED", "TFENV_UNSET"} {
		if _, ok := env[k]; ok {
			t.Errorf("%s leaked into the environment", k)
		}
	}
	if strings.Join(secrets, ",") != "tok-and-more-x,passed-value,tok" {
		t.Errorf("secrets = %v, want longest first", secrets)
	}
	if _, _, err := Build(Settings{Env: map[string]string{"TF_LOG": "trace"}}); err == nil || !strings.Contains(err.Error(), "TF_LOG") {
		t.Errorf("TF_LOG accepted: %v", err)
	}
}

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"HCLOUD_TOKEN", true}, {"AWS_PROFILE", true}, {"TF_TOKEN_app_terraform_io", true},
		{"", false}, {"A=B", false}, {"TF_VAR_x", false}, {"TF_CLI_ARGS_plan", false}, {"TF_LOG", false},
		{"TF_LOG_PATH", false}, {"TF_WORKSPACE", false}, {"TF_CLI_CONFIG_FILE", false}, {"TF_DATA_DIR", false},
		{"TF_REATTACH_PROVIDERS", false}, {"TF_INPUT", false},
	} {
		if err := CheckName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestValidBackendType(t *testing.T) {
	for s, want := range map[string]bool{"local": true, "s3": true, "oss_v2": true, "": false, "S3": false, "my-backend": false, "a b": false} {
		if got := ValidBackendType(s); got != want {
			t.Errorf("ValidBackendType(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestWorkspaceKeepsCredentialsApart: the environment every workspace
// gets holds no credential of env or pass_env; they come apart, by name,
// and are still scrubbed.
func TestWorkspaceKeepsCredentialsApart(t *testing.T) {
	t.Setenv("HCLOUD_TOKEN", "marker-pass")
	env, creds, secrets, err := Workspace(Settings{Env: map[string]string{"API_TOKEN": "marker-env"}, PassEnv: []string{"HCLOUD_TOKEN", "UNSET_ONE"}, Home: "/h"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"API_TOKEN", "HCLOUD_TOKEN", "UNSET_ONE"} {
		if _, ok := env[k]; ok {
			t.Errorf("the shared environment holds %s", k)
		}
	}
	if env["PATH"] == "" || env["CHECKPOINT_DISABLE"] != "1" {
		t.Errorf("the shared environment lost its base: %v", env)
	}
	if creds["API_TOKEN"] != "marker-env" || creds["HCLOUD_TOKEN"] != "marker-pass" || len(creds) != 2 {
		t.Errorf("credentials %v", creds)
	}
	if !slices.Contains(secrets, "marker-env") || !slices.Contains(secrets, "marker-pass") {
		t.Errorf("secrets %v lack a credential", secrets)
	}
	if _, _, _, err := Workspace(Settings{PassEnv: []string{"TF_VAR_x"}}); err == nil {
		t.Error("TF_VAR_x in pass_env was accepted")
	}
}
