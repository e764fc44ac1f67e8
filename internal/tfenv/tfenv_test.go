package tfenv

import (
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
