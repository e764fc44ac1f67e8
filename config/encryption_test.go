package config

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
)

func TestEncryption(t *testing.T) {
	t.Setenv("TFCCM_TEST_PASSPHRASE", "correct-horse-battery-staple-42")
	const body = `
  key_provider "pbkdf2" "main" {
    passphrase = env.TFCCM_TEST_PASSPHRASE
  }
  key_provider "aws_kms" "kms" {
    kms_key_id = "alias/tfccm"
    region     = "eu-west-1"
    key_spec   = "AES_256"
  }
  method "aes_gcm" "main" {
    keys = key_provider.pbkdf2.main
  }
  state {
    method   = method.aes_gcm.main
    enforced = true
  }
  plan {
    method   = method.aes_gcm.main
    enforced = true
  }
`
	c, err := Parse([]byte("cluster_name = \"prod\"\nencryption {"+body+"}\n"), "cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	e := c.Encryption
	if c.Terraform.Encryption != e {
		t.Fatal("terraform settings do not carry the encryption block")
	}
	for _, want := range []string{`passphrase = "correct-horse-battery-staple-42"`, `kms_key_id = "alias/tfccm"`, "enforced = true", "keys = key_provider.pbkdf2.main"} {
		if !strings.Contains(e.Source, want) {
			t.Errorf("TF_ENCRYPTION lacks %q:\n%s", want, e.Source)
		}
	}
	pub := string(e.Public)
	if strings.Contains(pub, "correct-horse") || strings.Contains(pub, `"pbkdf2"`) || !strings.Contains(pub, `"aws_kms"`) || !strings.Contains(pub, "method.aes_gcm.main") {
		t.Errorf("the written part holds the key's provider or lacks the rest:\n%s", pub)
	}
	if len(e.Secrets) != 1 || e.Secrets[0] != "correct-horse-battery-staple-42" {
		t.Errorf("secrets = %q", e.Secrets)
	}
	s := c.Terraform.EnvSettings("/tmp")
	if s.Encryption != e.Source || len(s.EncryptionSecrets) != 1 {
		t.Errorf("EnvSettings: %+v", s)
	}

	for _, tt := range []struct{ name, cfg, want string }{
		{"terraform binary", "terraform { binary = \"/usr/bin/terraform\" }\nencryption {" + body + "}", "Encryption needs OpenTofu"},
		{"missing key", `encryption {
  key_provider "pbkdf2" "main" { passphrase = env.TFCCM_TEST_UNSET_PASSPHRASE }
  method "aes_gcm" "main" { keys = key_provider.pbkdf2.main }
  state { method = method.aes_gcm.main }
}`, "env.TFCCM_TEST_UNSET_PASSPHRASE, which is not set"},
		{"no state or plan", `encryption {
  method "unencrypted" "none" {}
}`, "without a state or plan block"},
		{"unknown block", `encryption {
  methods "aes_gcm" "x" {}
  state { method = method.aes_gcm.x }
}`, `"methods" is not an OpenTofu encryption block`},
		{"attribute", `encryption {
  enforced = true
  state { method = method.aes_gcm.x }
}`, "holds blocks only"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte("cluster_name = \"prod\"\n"+tt.cfg+"\n"), "cloud.hcl")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "cloud.hcl:") {
				t.Fatalf("error %v, want %q at cloud.hcl:line", err, tt.want)
			}
			if strings.Contains(err.Error(), "correct-horse") {
				t.Errorf("error leaks the key: %v", err)
			}
		})
	}
}

// TestEncryptionBody: the text handed to hclwrite is the block's between
// its braces, starting where the body does (so that diagnostics point at
// the cloud config's lines); the terraform binary is refused first.
func TestEncryptionBody(t *testing.T) {
	for _, tt := range []struct {
		name, cfg, inner, err string
		line, column          int
	}{
		{"indented", "  encryption {\n state {}\n}", "\n state {}\n", "", 2, 15},
		{"block on lines", "encryption {\n  plan {}\n}", "\n  plan {}\n", "", 2, 13},
		{"terraform binary", "terraform { binary = \"terraform\" }\nencryption {\n  state {}\n}", "", "Encryption needs OpenTofu", 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := []byte("cluster_name = \"prod\"\n" + tt.cfg + "\n")
			p := hclparse.NewParser()
			f, diags := p.ParseHCL(src, "cloud.hcl")
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			var c Config
			if diags := gohcl.DecodeBody(f.Body, nil, &c); diags.HasErrors() {
				t.Fatal(diags)
			}
			c.fillBlocks()
			_, inner, start, diags := c.encryptionBody(src)
			if tt.err != "" {
				if !diags.HasErrors() || !strings.Contains(diags.Error(), tt.err) {
					t.Fatalf("diagnostics %v, want %q", diags, tt.err)
				}
				return
			}
			if diags.HasErrors() || string(inner) != tt.inner || start.Line != tt.line || start.Column != tt.column {
				t.Errorf("inner %q at %d:%d (%v), want %q at %d:%d", inner, start.Line, start.Column, diags, tt.inner, tt.line, tt.column)
			}
		})
	}
}
