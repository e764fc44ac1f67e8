package config

import (
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/keyserver"
)

func TestTfccmKeyProvider(t *testing.T) {
	const pass = "correct-horse-battery-staple-42"
	t.Setenv("TFCCM_TEST_PASSPHRASE", pass)
	t.Setenv("TFCCM_TEST_SHORT", "short")
	srv, err := keyserver.New(t.TempDir(), "/usr/local/bin/tfccm-ccm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	old := keyServer
	keyServer = func() (*keyserver.Server, error) { return srv, nil }
	t.Cleanup(func() { keyServer = old })

	const body = `
  key_provider "pbkdf2" "old" {
    passphrase = env.TFCCM_TEST_PASSPHRASE
  }
  key_provider "tfccm_pbkdf2" "main" {
    passphrase = env.TFCCM_TEST_PASSPHRASE
  }
  method "aes_gcm" "main" {
    keys = key_provider.tfccm_pbkdf2.main
  }
  method "aes_gcm" "old" {
    keys = key_provider.pbkdf2.old
  }
  state {
    method = method.aes_gcm.main
    fallback {
      method = method.aes_gcm.old
    }
  }
  plan {
    method = method.aes_gcm.main
  }
`
	c, err := Parse([]byte("cluster_name = \"prod\"\nencryption {"+body+"}\n"), "cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	e := c.Encryption
	for _, want := range []string{`key_provider "external" "main"`, `"/usr/local/bin/tfccm-ccm", "` + keyserver.Marker + `", "` + srv.Socket() + `"`, "keys = key_provider.external.main", "keys = key_provider.pbkdf2.old"} {
		if !strings.Contains(e.Source, want) {
			t.Errorf("TF_ENCRYPTION lacks %q:\n%s", want, e.Source)
		}
	}
	if strings.Count(e.Source, pass) != 1 || strings.Contains(e.Source, TfccmKeyProvider) {
		t.Errorf("TF_ENCRYPTION holds the passphrase outside the pbkdf2 fallback, or tfccm_pbkdf2:\n%s", e.Source)
	}
	pub := string(e.Public)
	if strings.Contains(pub, pass) || strings.Contains(pub, "key_provider \"") || strings.Contains(pub, srv.Socket()) || !strings.Contains(pub, "keys = key_provider.external.main") {
		t.Errorf("the written part holds a key provider or lacks the renamed reference:\n%s", pub)
	}
	// The socket and id are scrubbed with the passphrase: the hash of the
	// scrubbed configuration is the same in every process.
	joined := strings.Join(e.Secrets, "\n")
	if !strings.Contains(joined, pass) || !strings.Contains(joined, srv.Socket()) {
		t.Errorf("secrets = %q", e.Secrets)
	}
	again, err := Parse([]byte("cluster_name = \"prod\"\nencryption {"+body+"}\n"), "cloud.hcl")
	if err != nil || again.Encryption.Source != e.Source {
		t.Errorf("reloaded: %v, source differs: %v", err, err == nil && again.Encryption.Source != e.Source)
	}

	for _, tt := range []struct{ name, kp, want string }{
		{"literal passphrase", `passphrase = "correct-horse-battery-staple-42"`, "passphrase must be env.NAME"},
		{"no passphrase", ``, "passphrase = env.NAME is required"},
		{"other attribute", "passphrase = env.TFCCM_TEST_PASSPHRASE\n iterations = 200000", `unexpected attribute "iterations"`},
		{"unset", `passphrase = env.TFCCM_TEST_UNSET`, "env.TFCCM_TEST_UNSET, which is not set"},
		{"short", `passphrase = env.TFCCM_TEST_SHORT`, "at least 16"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := "encryption {\n key_provider \"tfccm_pbkdf2\" \"k\" {\n " + tt.kp + "\n }\n method \"aes_gcm\" \"m\" { keys = key_provider.tfccm_pbkdf2.k }\n state { method = method.aes_gcm.m }\n}"
			_, err := Parse([]byte("cluster_name = \"prod\"\n"+cfg+"\n"), "cloud.hcl")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "cloud.hcl:") {
				t.Fatalf("error %v, want %q at cloud.hcl:line", err, tt.want)
			}
			if strings.Contains(err.Error(), pass) || strings.Contains(err.Error(), "short\"") {
				t.Errorf("error leaks the key: %v", err)
			}
		})
	}
	t.Run("runner jobs", func(t *testing.T) {
		cfg := "backend \"kubernetes\" {\n secret_suffix = \"tfccm\"\n in_cluster_config = true\n}\nterraform {\n runner = \"job\"\n job {\n image = \"tfccm:1\"\n }\n}\nencryption {\n key_provider \"tfccm_pbkdf2\" \"k\" { passphrase = env.TFCCM_TEST_PASSPHRASE }\n method \"aes_gcm\" \"m\" { keys = key_provider.tfccm_pbkdf2.k }\n state { method = method.aes_gcm.m }\n}"
		_, err := Parse([]byte("cluster_name = \"prod\"\n"+cfg+"\n"), "cloud.hcl")
		if err == nil || !strings.Contains(err.Error(), "needs tofu in the controller's pod") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("name used twice", func(t *testing.T) {
		cfg := "encryption {\n key_provider \"tfccm_pbkdf2\" \"k\" { passphrase = env.TFCCM_TEST_PASSPHRASE }\n key_provider \"external\" \"k\" { command = [\"x\"] }\n method \"aes_gcm\" \"m\" { keys = key_provider.tfccm_pbkdf2.k }\n state { method = method.aes_gcm.m }\n}"
		_, err := Parse([]byte("cluster_name = \"prod\"\n"+cfg+"\n"), "cloud.hcl")
		if err == nil || !strings.Contains(err.Error(), "Duplicate key provider name") {
			t.Fatalf("error %v", err)
		}
	})
}
