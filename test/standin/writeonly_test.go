package standin

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tfccm/tfccm/internal/testkit"
)

const writeOnlyConfig = `variable "secrets" {
  type      = map(string)
  ephemeral = true
}

provider "google" {
  access_token = var.secrets["token"]
  project      = "p"
}

resource "google_compute_ssl_certificate" "tls" {
  name                   = "tls"
  certificate            = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
  private_key_wo         = var.secrets["key"]
  private_key_wo_version = "1"
}
`

// TestWriteOnlyArguments: an argument named *_wo is served write-only:
// OpenTofu takes an ephemeral value for it, the stand-in receives it (its
// fingerprint is logged, as is the provider configuration's) and neither
// the saved plan nor the state holds it.
func TestWriteOnlyArguments(t *testing.T) {
	e := Setup(t, "google")
	e.Only = []string{"google_compute_ssl_certificate"}
	dir := writeConfig(t, writeOnlyConfig)
	vars := filepath.Join(t.TempDir(), "secrets.tfvars.json")
	if err := os.WriteFile(vars, []byte(`{"secrets": {"token": "tok-wo-1", "key": "key-wo-2"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Tofu(t, dir, "init", "-input=false", "-no-color")
	e.Tofu(t, dir, "plan", "-input=false", "-no-color", "-out=p.tfplan", "-var-file="+vars)
	e.Tofu(t, dir, "apply", "-input=false", "-no-color", "-var-file="+vars, "p.tfplan")
	calls := e.Calls(t)
	if len(calls) != 1 || calls[0].WriteOnly["private_key_wo"] != Fingerprint("key-wo-2") || calls[0].Values["private_key_wo"] != nil {
		t.Fatalf("calls %+v: want one create that received the key, with it null in the state", calls)
	}
	configs := e.ProviderConfigs(t)
	if len(configs) == 0 || configs[len(configs)-1]["access_token"] != Fingerprint("tok-wo-1") {
		t.Errorf("provider configurations %v: want the token's fingerprint", configs)
	}
	for _, f := range []string{"terraform.tfstate", "p.tfplan"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if found := testkit.SecretsIn(b, "tok-wo-1", "key-wo-2"); len(found) != 0 {
			t.Errorf("%s holds %v", f, found)
		}
	}
}
