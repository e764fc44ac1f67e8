package instances

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/internal/secret"
)

// TestTofuSources reads real OpenTofu state both ways (working directory
// through its backend, and state file) and maps it with the local cloud's
// instances.hcl.
func TestTofuSources(t *testing.T) {
	inf := newInfra(t)
	inf.apply(twoNodes())
	tfc := tfConfig(t)
	dirSrc, err := newDirSource("infra-dir", inf.dir, tfc)
	if err != nil {
		t.Fatal(err)
	}
	fileSrc, err := newFileSource("infra-file", inf.stateFile(), tfc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fileSrc.Close(); _ = dirSrc.Close() })
	m := localMapping(t)
	want := []*Instance{{
		Name: "a", ProviderID: "terraform://local/a", InstanceType: "small", Zone: "zone-a", Region: "region-1",
		Addresses: []Address{{Type: "InternalIP", Address: "10.250.0.2"}, {Type: "InternalIP", Address: "fd00:250::2"}, {Type: "Hostname", Address: "a"}},
		Labels:    map[string]string{"tfccm.io/netns": "tfccm-n-a"},
		Resource:  `terraform_data.node["a"]`, Rule: "node",
	}, {
		Name: "b", ProviderID: "terraform://local/b", InstanceType: "large", Zone: "zone-b", Region: "region-1",
		Addresses: []Address{{Type: "InternalIP", Address: "10.250.0.3"}, {Type: "Hostname", Address: "b"}},
		Labels:    map[string]string{"tfccm.io/netns": "tfccm-n-b"},
		Shutdown:  true,
		Resource:  `terraform_data.node["b"]`, Rule: "node",
	}}
	for _, src := range []Source{dirSrc, fileSrc} {
		t.Run(src.Name(), func(t *testing.T) {
			st, err := src.Read(context.Background())
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			ix := BuildIndex(m, st)
			if errs, n := ix.Errors(); n != 0 {
				t.Fatalf("mapping errors: %v", errs)
			}
			if ix.Resources() != 4 {
				t.Errorf("Resources = %d, want 4 (2 nodes, router, credentials)", ix.Resources())
			}
			if got := ix.Instances(); !reflect.DeepEqual(got, want) {
				t.Fatalf("Instances:\n got  %+v\n want %+v", got, want)
			}
		})
	}
	// Neither an unencrypted state file nor a directory with the local
	// backend is read through tofu.
	if dirSrc.tmpDir != "" || fileSrc.tmpDir != "" {
		t.Errorf("an unencrypted local state was read through tofu (%q, %q)", dirSrc.tmpDir, fileSrc.tmpDir)
	}
	// The directory moved away after a good read: an error, never an empty
	// state (every instance would look gone).
	away := inf.dir + ".away"
	if err := os.Rename(inf.dir, away); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Rename(away, inf.dir) })
	if st, err := dirSrc.Read(context.Background()); err == nil {
		t.Fatalf("Read of a directory moved away succeeded (%d resources), want an error", len(st.Values.RootModule.Resources))
	}
}

func TestTofuSourceErrors(t *testing.T) {
	tfc := tfConfig(t)
	tfc.Env = map[string]string{"BACKEND_TOKEN": "very-secret-token"}
	dir := t.TempDir()
	tests := []struct {
		name string
		src  func() (*TofuSource, error)
		want string
	}{
		{"missing state file", func() (*TofuSource, error) {
			return newFileSource("f", filepath.Join(dir, "nope.tfstate"), tfc)
		}, "no such file"},
		{"corrupt state file", func() (*TofuSource, error) {
			p := filepath.Join(dir, "bad.tfstate")
			if err := os.WriteFile(p, []byte("{not json"), 0o600); err != nil {
				t.Fatal(err)
			}
			return newFileSource("f", p, tfc)
		}, "decode state"},
		{"missing dir", func() (*TofuSource, error) {
			return newDirSource("d", filepath.Join(dir, "nodir"), tfc)
		}, "no such file"},
		{"missing binary", func() (*TofuSource, error) {
			c := *tfc
			c.Binary = filepath.Join(dir, "no-tofu")
			remote := filepath.Join(dir, "remote")
			if err := os.MkdirAll(remote, 0o700); err != nil {
				t.Fatal(err)
			}
			backend := "terraform {\n  backend \"http\" {\n    address = \"http://127.0.0.1:1/state\"\n  }\n}\n"
			if err := os.WriteFile(filepath.Join(remote, "backend.tf"), []byte(backend), 0o600); err != nil {
				t.Fatal(err)
			}
			return newDirSource("d", remote, &c)
		}, "no-tofu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := tt.src()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = src.Close() })
			_, err = src.Read(context.Background())
			if err == nil {
				t.Fatal("Read succeeded, want error")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `"`+src.Name()+`"`) {
				t.Errorf("error %q lacks %q or the source name", err, tt.want)
			}
			if strings.Contains(err.Error(), "very-secret-token") {
				t.Errorf("error leaks the secret: %q", err)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	t.Setenv("TFCCM_TEST_PASS", "passed-value")
	env, secrets, err := Env(&config.Terraform{
		Env: map[string]string{"AWS_SECRET_ACCESS_KEY": "abc123"}, PassEnv: []string{"TFCCM_TEST_PASS", "TFCCM_TEST_UNSET"},
		CLIConfigFile: "/etc/tfccm/tofurc", PluginCacheDir: "/var/cache/tofu",
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_SECRET_ACCESS_KEY": "abc123", "TFCCM_TEST_PASS": "passed-value",
		"TF_CLI_CONFIG_FILE": "/etc/tfccm/tofurc", "TF_PLUGIN_CACHE_DIR": "/var/cache/tofu", "CHECKPOINT_DISABLE": "1",
	} {
		if env[k] != v {
			t.Errorf("env[%s] = %q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["TFCCM_TEST_UNSET"]; ok {
		t.Error("unset pass_env variable was passed")
	}
	if !reflect.DeepEqual(secrets, []string{"passed-value", "abc123"}) {
		t.Errorf("secrets = %q", secrets)
	}
	if _, _, err := Env(&config.Terraform{Env: map[string]string{"TF_WORKSPACE": "x"}}); err == nil || !strings.Contains(err.Error(), "TF_WORKSPACE") {
		t.Errorf("TF_WORKSPACE accepted: %v", err)
	}

	src := &TofuSource{scrub: secret.NewScrubber(secrets)}
	inner := context.DeadlineExceeded
	err = src.scrub.ScrubError(errors.Join(errors.New("backend said abc123 and passed-value"), inner))
	if strings.Contains(err.Error(), "abc123") || strings.Contains(err.Error(), "passed-value") || !strings.Contains(err.Error(), secret.Placeholder) {
		t.Errorf("redact: %q", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("redact lost the wrapped error")
	}
}

// TestSourcesFromConfigRelativePaths: a relative dir or state_file is
// resolved against the cloud config's directory and made absolute, since
// tofu reads a state file from a scratch directory of its own.
func TestSourcesFromConfigRelativePaths(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	in := &config.Instances{Sources: []config.StateSource{
		{Name: "file", StateFile: "infra.tfstate"},
		{Name: "dir", Dir: "../infra"},
		{Name: "abs", StateFile: "/srv/state/x.tfstate"},
	}}
	srcs, err := SourcesFromConfig(in, nil, "conf")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{srcs[0].(*TofuSource).stateFile, srcs[1].(*TofuSource).dir, srcs[2].(*TofuSource).stateFile}
	want := []string{filepath.Join(wd, "conf", "infra.tfstate"), filepath.Join(wd, "infra"), "/srv/state/x.tfstate"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("paths = %q, want %q", got, want)
	}
}

// TestEncryptedSources: a state OpenTofu encrypted is read by the sources
// with the cloud config's encryption (tofu decrypts), and refused, naming
// the problem, without it.
func TestEncryptedSources(t *testing.T) {
	const key = `key_provider "pbkdf2" "k" {
  passphrase = "state-source-passphrase-01"
}
method "aes_gcm" "m" {
  keys = key_provider.pbkdf2.k
}
state {
  method   = method.aes_gcm.m
  enforced = true
}
`
	inf := newInfra(t)
	env, _, err := Env(&config.Terraform{Encryption: &config.Encryption{Source: key}})
	if err != nil {
		t.Fatal(err)
	}
	if err := inf.tf.SetEnv(env); err != nil {
		t.Fatal(err)
	}
	inf.apply(twoNodes())
	raw, err := os.ReadFile(inf.stateFile())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "10.250.0.2") || !strings.Contains(string(raw), "encrypted_data") {
		t.Fatalf("the state file is not encrypted:\n%.300s", raw)
	}

	// A plaintext state next to it: encryption configured reads it too.
	clear := newInfra(t)
	clear.apply(twoNodes())

	plain := tfConfig(t)
	enc := tfConfig(t)
	enc.Encryption = &config.Encryption{Source: key, Secrets: []string{"state-source-passphrase-01"}}
	m := localMapping(t)
	for _, tt := range []struct {
		name string
		src  func() (*TofuSource, error)
		want string // error, "" for the two nodes
	}{
		{"file without key", func() (*TofuSource, error) { return newFileSource("f", inf.stateFile(), plain) }, "encrypted"},
		{"dir without key", func() (*TofuSource, error) { return newDirSource("d", inf.dir, plain) }, "encrypted"},
		{"file", func() (*TofuSource, error) { return newFileSource("f", inf.stateFile(), enc) }, ""},
		{"dir", func() (*TofuSource, error) { return newDirSource("d", inf.dir, enc) }, ""},
		{"plaintext file", func() (*TofuSource, error) { return newFileSource("f", clear.stateFile(), enc) }, ""},
		{"plaintext dir", func() (*TofuSource, error) { return newDirSource("d", clear.dir, enc) }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src, err := tt.src()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = src.Close() })
			st, err := src.Read(context.Background())
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Read = %v, want an error naming %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := BuildIndex(m, st).Len(); n != 2 {
				t.Fatalf("%d instances, want 2", n)
			}
			// A second read goes the way the first one found.
			if _, err := src.Read(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
