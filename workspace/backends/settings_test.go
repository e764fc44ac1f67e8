package backends

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestSplitSecrets(t *testing.T) {
	for _, tc := range []struct {
		name      string
		typ       string
		config    map[string]string
		env, file map[string]string
	}{
		{"none", "s3", nil, nil, nil},
		{"to the environment", "http", map[string]string{"password": "p"}, map[string]string{"TF_HTTP_PASSWORD": "p"}, nil},
		{"no variable: a file", "http", map[string]string{"lock_address": "x"}, nil, map[string]string{"lock_address": "x"}},
		{"both", "pg", map[string]string{"conn_str": "c", "schema_name": "s"}, map[string]string{"PG_CONN_STR": "c"}, map[string]string{"schema_name": "s"}},
		{"unknown type: a file", "etcdv9", map[string]string{"token": "t"}, nil, map[string]string{"token": "t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, file := SplitSecrets(tc.typ, tc.config)
			if !maps.Equal(env, tc.env) || !maps.Equal(file, tc.file) {
				t.Errorf("SplitSecrets = %v, %v; want %v, %v", env, file, tc.env, tc.file)
			}
		})
	}
}

func TestWriteConfigFile(t *testing.T) {
	work := t.TempDir()
	path, cleanup, err := WriteConfigFile(work, "lb-a", map[string]string{"b": "two \"quoted\" ${x}", "a": "one"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a = \"one\"\nb = \"two \\\"quoted\\\" $${x}\"\n"; string(b) != want {
		t.Errorf("config file:\n%s\nwant:\n%s", b, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 || filepath.Dir(path) != filepath.Join(work, ".secrets") {
		t.Errorf("config file %s: %v, %v; want mode 0600 under .secrets", path, fi, err)
	}
	cleanup()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("cleanup left %s: %v", path, err)
	}
	if _, _, err := WriteConfigFile(work, "lb-a", map[string]string{"a = 1\nb": "x"}); err == nil || !strings.Contains(err.Error(), "not a valid setting name") {
		t.Errorf("an invalid setting name: %v", err)
	}
}

func TestInfo(t *testing.T) {
	for _, tc := range []struct {
		name  string
		info  Info
		local bool
		state string
	}{
		{"default", Info{}, true, "/w/terraform.tfstate"},
		{"local", Info{Type: "local"}, true, "/w/terraform.tfstate"},
		{"relative path", Info{Type: "local", Attributes: map[string]cty.Value{"path": cty.StringVal("s/x.tfstate")}}, true, "/w/s/x.tfstate"},
		{"absolute path", Info{Type: "local", Attributes: map[string]cty.Value{"path": cty.StringVal("/state/x.tfstate")}}, true, "/state/x.tfstate"},
		{"path not a string", Info{Type: "local", Attributes: map[string]cty.Value{"path": cty.True}}, true, "/w/terraform.tfstate"},
		{"remote", Info{Type: "kubernetes"}, false, "/w/terraform.tfstate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.info.IsLocal(); got != tc.local {
				t.Errorf("IsLocal = %v, want %v", got, tc.local)
			}
			if got := tc.info.LocalStatePath("/w"); got != tc.state {
				t.Errorf("LocalStatePath = %s, want %s", got, tc.state)
			}
		})
	}
}
