package templates

import (
	"bytes"
	"strings"
	"testing"
)

// TestBackendMatchesRender: the backend of a workspace name alone is the
// one a full render of that workspace generates.
func TestBackendMatchesRender(t *testing.T) {
	cfg := testConfig(t, baseConfig+"\nbackend \"kubernetes\" {\n  namespace = \"kube-system\"\n}\n")
	ws, err := fullSet(t).RenderLoadBalancer(cfg, svc(nil), testNodes())
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
	ws, err := fullSet(t).RenderLoadBalancer(cfg, svc(nil), testNodes())
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
