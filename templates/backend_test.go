package templates

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/workspace/backends"
)

// TestBackendMatchesRender: the backend of a workspace name alone is the
// one a full render of that workspace generates.
func TestBackendMatchesRender(t *testing.T) {
	cfg := testConfig(t, baseConfig+"\nbackend \"kubernetes\" {\n  namespace = \"tfccm-state\"\n}\n")
	ws, err := fullSet(t).RenderLoadBalancer(cfg, svc(nil), testNodes(), Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Backend(cfg, ws.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Files[BackendFile], ws.Files[BackendFile]) || b.StateWorkspace != ws.StateWorkspace || b.Backend.Type != "kubernetes" {
		t.Errorf("backend of %s:\n%s\nrender:\n%s", ws.Name, b.Files[BackendFile], ws.Files[BackendFile])
	}
	if got := b.Backend.Attributes["secret_suffix"].AsString(); got != ws.Name {
		t.Errorf("secret_suffix = %q, want %q", got, ws.Name)
	}
}

// TestBackendEncryption: the encryption block is written into the
// workspace's terraform block without the key provider whose key comes
// from the environment; the workspace (LB and routes) is valid OpenTofu
// once TF_ENCRYPTION brings that key provider.
func TestBackendEncryption(t *testing.T) {
	t.Setenv("TFCCM_TEST_STATE_KEY", "a-state-key-of-enough-length")
	cfg := testConfig(t, baseConfig+`
encryption {
  key_provider "pbkdf2" "main" {
    passphrase = env.TFCCM_TEST_STATE_KEY
  }
  method "aes_gcm" "main" {
    keys = key_provider.pbkdf2.main
  }
  state {
    method   = method.aes_gcm.main
    enforced = true
  }
}
`)
	ws, err := fullSet(t).RenderLoadBalancer(cfg, svc(nil), testNodes(), Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range ws.Files {
		if bytes.Contains(f, []byte("a-state-key-of-enough-length")) {
			t.Errorf("%s holds the key", name)
		}
	}
	got := string(ws.Files[BackendFile])
	for _, want := range []string{"encryption {", `method "aes_gcm" "main"`, "keys = key_provider.pbkdf2.main", "enforced = true"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %q:\n%s", BackendFile, want, got)
		}
	}
	if strings.Contains(got, `key_provider "pbkdf2"`) {
		t.Errorf("%s declares the keyed key provider:\n%s", BackendFile, got)
	}
	b, err := Backend(cfg, ws.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Files[BackendFile], ws.Files[BackendFile]) {
		t.Errorf("Backend and the render differ:\n%s\n%s", b.Files[BackendFile], ws.Files[BackendFile])
	}
}

// TestCatalog: the catalog lives under the key the backend gives the name
// tfccm-catalog, with the encryption block the workspaces get; there is
// none for the local backend (the work dir holds its states) or http (no
// Terraform workspaces to list).
func TestCatalog(t *testing.T) {
	for _, tc := range []struct {
		backend, attr, want string
	}{
		{"", "", ""},
		{"backend \"local\" {}\n", "", ""},
		{"backend \"http\" {\n  address = \"https://state.example/tfccm\"\n}\n", "", ""},
		{"backend \"kubernetes\" {\n  namespace = \"tfccm-state\"\n}\n", "secret_suffix", "tfccm-catalog"},
		{"backend \"pg\" {}\n", "schema_name", "tfccm_tfccm_catalog"},
		{"backend \"s3\" {\n  bucket = \"b\"\n}\n", "key", "tfccm/prod-eu/tfccm-catalog.tfstate"},
	} {
		cfg := testConfig(t, baseConfig+"\n"+tc.backend)
		c, err := Catalog(cfg)
		if err != nil {
			t.Fatalf("%s: %v", tc.backend, err)
		}
		if tc.want == "" {
			if c != nil {
				t.Errorf("%s: a catalog (%+v), want none", tc.backend, c.Backend)
			}
			continue
		}
		if c == nil || c.Name != backends.CatalogName {
			t.Fatalf("%s: catalog %+v", tc.backend, c)
		}
		if got := c.Backend.Attributes[tc.attr].AsString(); got != tc.want {
			t.Errorf("%s: %s = %q, want %q", tc.backend, tc.attr, got, tc.want)
		}
		if !bytes.Contains(c.Files[BackendFile], []byte(tc.want)) {
			t.Errorf("%s: backend file:\n%s", tc.backend, c.Files[BackendFile])
		}
	}
}
